# Detect objects in a photo: pe.vision's ObjectDetector (CenterNet, the 80 COCO classes, from the server's /models)
# on a sample photo; pe.browser.show_image draws the boxes over it in the Output. Try another photo or threshold.
detector = await pe.vision.ObjectDetector.load("models/centernet")
image = await pe.browser.fetch_image("samples/astronaut.png")  # int32 [height, width, 3]
objects = await detector.detect(image, max_results=10, threshold=0.3)
pixels = (await image.data()).reshape(image.shape)  # read back once: show_image draws from the host
image.dispose()
pe.browser.show_image(pixels, boxes=objects, title="Objects")
for found in objects:
    print(f"{found.label:14} {found.score:4.0%}  x {found.box.x_min:.0f}..{found.box.x_max:.0f}")
result = [found.label for found in objects]
result
