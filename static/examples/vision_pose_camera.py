# Pose from the camera: pe.vision's PoseDetector (MoveNet Lightning, 17 body keypoints) on the webcam's frames, each
# shown in the Output with its keypoints (pe.browser.show_image, key= keeps one live picture). Stop ends it early.
detector = await pe.vision.PoseDetector.load("models/movenet-lightning")
frames = 30
for frame_number in range(frames):
    with pe.scope():  # each frame's tensors go at the end of its step: the count stays flat
        frame = await pe.browser.camera_frame()
        poses = await detector.estimate_poses(frame)
        pixels = (await frame.data()).reshape(frame.shape)
    seen = [k.name for pose in poses for k in pose.keypoints if k.score > 0.3]
    pe.browser.show_image(pixels, points=poses, title=f"Frame {frame_number + 1}: {len(seen)} keypoints", key="pose")
print(f"{frames} frames; the last pose's score: {poses[0].score:.2f}" if poses else f"{frames} frames, no pose")
result = {"frames": frames, "keypoints": len(poses[0].keypoints) if poses else 0}
result
