# Classify an image from code: the worker's own classifier (EfficientNet-Lite0 from the server's /models, loaded
# and warmed up once, as the Classify panel does), fed with a sample photo decoded by the browser.
import js
import playground  # the page's worker module: load_classifier(), classify(pixels, height, width)

response = await js.fetch("samples/chelsea.png")
bitmap = await js.createImageBitmap(await response.blob())
canvas = js.OffscreenCanvas.new(bitmap.width, bitmap.height)
context = canvas.getContext("2d")
context.drawImage(bitmap, 0, 0)
pixels = context.getImageData(0, 0, bitmap.width, bitmap.height).data  # RGBA bytes
found = await playground.classify(pixels, bitmap.height, bitmap.width)
for row in found["top"]:
    print(f"{row['probability']:6.1%}  {row['label']}")
result = found["top"][0]
result
