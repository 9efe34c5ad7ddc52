# Faces and emotions: pe.vision's FaceDetector (BlazeFace: a box and 6 points per face; with the emotion model, each
# face's 7 emotions' probabilities) on a sample photo, drawn with pe.browser.show_image in the Output.
detector = await pe.vision.FaceDetector.load("models/blazeface", emotion="models/emotion")
image = await pe.browser.fetch_image("samples/astronaut.png")
faces = await detector.estimate_faces(image)
pixels = (await image.data()).reshape(image.shape)
image.dispose()
pe.browser.show_image(pixels, boxes=faces, points=faces, title="Faces")
for face in faces:
    emotion = f", looks {max(face.emotion, key=face.emotion.get)}" if face.emotion else ""
    print(f"a face ({face.score:.0%}) {face.box.width:.0f}x{face.box.height:.0f} px{emotion}")
result = [face.to_dict() for face in faces]
result
