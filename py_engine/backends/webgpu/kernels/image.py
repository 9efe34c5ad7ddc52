"""Image-resize WGSL kernels (NHWC), and their gradients without atomics; unpacking RGBA pixels; crop and resize;
projective transforms;
non-max suppression, which runs on the host after a readback (host_kernel.py: its output's length depends on the values).

Resizes: coordinates are computed in float32 from a scale that the CPU divides in float32 (WGSL division
is not correctly rounded), so floor/round pick the pixels numpy picks. The gradients run per axis (x, then y,
as numpy): a small pass finds, for each input row/column, the contiguous range of output rows/columns that
read it (the source index never decreases along an axis), then one thread per element sums over its range.
"""

import functools

import numpy as np

from ....kernel_registry import register_kernel
from ..host_kernel import on_host
from ..shader_layout import compose_linear_shader
from ..wgsl import linear_groups

F32, I32 = "float32", "int32"
U32 = "bool"  # stored as u32 on the GPU: the dtype of the resize gradients' index ranges

# ---- resizing ---------------------------------------------------------------------------------------
# Per axis (0: y, 1: x): input and output size and scale; then half_pixel_centers and align_corners, and per
# shader `inner` (channels, or the elements after the summed axis) and `first` (the axis's entries in ranges).
RESIZE_UNIFORMS = dict.fromkeys(("inner", "first", "half_pixel_centers", "align_corners"), "u32")
RESIZE_UNIFORMS |= {"in_size": "u32[2]", "out_size": "u32[2]", "scale": "f32[2]"}

# Source index of output index o along axis a, as the numpy kernels compute it.
AXIS_FNS = {
    "bilinear": """
fn source(o: u32, a: u32) -> f32 {
  if (u.half_pixel_centers != 0u) { return (f32(o) + 0.5) * u_scale(a) - 0.5; }
  return f32(o) * u_scale(a);
}
fn lower(o: u32, a: u32) -> i32 { return clamp(i32(floor(source(o, a))), 0, i32(u_in_size(a)) - 1); }
fn upper(o: u32, a: u32) -> i32 { return min(i32(ceil(source(o, a))), i32(u_in_size(a)) - 1); }
fn lerp(o: u32, a: u32) -> f32 { let s = source(o, a); return s - floor(s); }
""",
    "nearest": """
fn source(o: u32, a: u32) -> f32 {
  if (u.half_pixel_centers != 0u) { return (f32(o) + 0.5) * u_scale(a); }
  return f32(o) * u_scale(a);
}
fn nearest(o: u32, a: u32) -> i32 {
  let s = source(o, a);
  var index = floor(s);
  if (u.align_corners != 0u && s - index >= 0.5) { index = index + 1.0; }  // roundf: halves go up
  return min(i32(index), i32(u_in_size(a)) - 1);
}
""",
}
INDEX_FNS = {"bilinear": ("lower", "upper"), "nearest": ("nearest",)}


def _scale(n_in, n_out, align_corners):
    if align_corners and n_out > 1:
        return float(np.float32(n_in - 1) / np.float32(n_out - 1))
    return float(np.float32(n_in) / np.float32(n_out))


def _resize_uniforms(count, inner, first, input_hw, output_hw, align_corners, half_pixel_centers):
    scale = [_scale(n_in, n_out, align_corners) for n_in, n_out in zip(input_hw, output_hw)]
    values = {"count": count, "inner": inner, "first": first, "half_pixel_centers": int(half_pixel_centers)}
    return values | {"align_corners": int(align_corners), "in_size": input_hw, "out_size": output_hw, "scale": scale}


def _resize_program(key, body, inputs, outputs, kind, helpers=""):
    return compose_linear_shader(key, body, inputs, outputs, RESIZE_UNIFORMS, AXIS_FNS[kind] + helpers)


@functools.cache
def _resize_shader(kind, dtype):
    # one thread per output element (n, oy, ox, c)
    pixel = "f32(images[((n * H + u32(Y)) * W + u32(X)) * C + c])"
    if kind == "bilinear":
        value = f"""  let y0 = lower(oy, 0u); let y1 = upper(oy, 0u); let y_lerp = lerp(oy, 0u);
  let x0 = lower(ox, 1u); let x1 = upper(ox, 1u); let x_lerp = lerp(ox, 1u);
  let top_left = {pixel.replace("Y", "y0").replace("X", "x0")};
  let top_right = {pixel.replace("Y", "y0").replace("X", "x1")};
  let bottom_left = {pixel.replace("Y", "y1").replace("X", "x0")};
  let bottom_right = {pixel.replace("Y", "y1").replace("X", "x1")};
  let top = top_left + (top_right - top_left) * x_lerp;
  let bottom = bottom_left + (bottom_right - bottom_left) * x_lerp;
  out[i] = top + (bottom - top) * y_lerp;"""
    else:
        value = f"  out[i] = {pixel.replace('Y', 'nearest(oy, 0u)').replace('X', 'nearest(ox, 1u)')};"
    body = f"""  let C = u.inner;
  let H = u_in_size(0u); let OH = u_out_size(0u); let W = u_in_size(1u); let OW = u_out_size(1u);
  let c = i % C;
  let ox = (i / C) % OW;
  let oy = (i / C / OW) % OH;
  let n = i / C / OW / OH;
{value}"""
    return _resize_program(f"Resize:{kind}:{dtype}", body, [("images", dtype)], [("out", F32)], kind)


@functools.cache
def _ranges_shader(kind):
    """ranges[4 t ..]: for input row t < H (then column t - H), the output range [start, end) of each index
    function that reads it. Index functions never decrease, so two binary searches find each range."""
    searches, writes = [], []
    for k, fn in enumerate(INDEX_FNS[kind]):
        searches.append(f"""
fn first_{fn}(wanted: i32, a: u32) -> u32 {{  // the first o with {fn}(o) >= wanted, or the output size
  var lo = 0u;
  var hi = u_out_size(a);
  while (lo < hi) {{
    let mid = (lo + hi) / 2u;
    if ({fn}(mid, a) < wanted) {{ lo = mid + 1u; }} else {{ hi = mid; }}
  }}
  return lo;
}}""")
        writes.append(f"  ranges[4u * i + {2 * k}u] = first_{fn}(t, a);")
        writes.append(f"  ranges[4u * i + {2 * k + 1}u] = first_{fn}(t + 1, a);")
    body = """  let H = u_in_size(0u);
  let a = select(1u, 0u, i < H);
  let t = i32(select(i - H, i, i < H));
""" + "\n".join(writes)
    return _resize_program(f"ResizeGrad:ranges:{kind}", body, [], [("ranges", U32)], kind, "".join(searches))


@functools.cache
def _resize_grad_axis_shader(kind, axis):
    """out (A, n_in, B) from dy (A, n_out, B): each element sums the dy entries along the axis that read it.
    u.inner is B, u.first where this axis's entries start in ranges."""
    a = 0 if axis == "y" else 1
    term = "dy[(a * n_out + o) * B + b]"
    if kind == "bilinear":
        sums = f"""  var from_lower = 0.0;
  for (var o = ranges[e]; o < ranges[e + 1u]; o = o + 1u) {{
    from_lower = from_lower + {term} * (1.0 - lerp(o, {a}u));
  }}
  var from_upper = 0.0;
  for (var o = ranges[e + 2u]; o < ranges[e + 3u]; o = o + 1u) {{
    from_upper = from_upper + {term} * lerp(o, {a}u);
  }}
  out[i] = from_lower + from_upper;"""
    else:
        sums = f"""  var total = 0.0;
  for (var o = ranges[e]; o < ranges[e + 1u]; o = o + 1u) {{ total = total + {term}; }}
  out[i] = total;"""
    body = f"""  let B = u.inner;
  let n_in = u_in_size({a}u); let n_out = u_out_size({a}u);
  let b = i % B;
  let k = (i / B) % n_in;
  let a = i / B / n_in;
  let e = 4u * (u.first + k);
{sums}"""
    ins = [("dy", F32), ("ranges", U32)]
    return _resize_program(f"ResizeGrad:{kind}:{axis}", body, ins, [("out", F32)], kind)


def _resize(kind):
    def kernel(backend, images, size, align_corners, half_pixel_centers):
        n, h, w, c = images.shape
        out = backend.empty((n, *size, c), F32)
        uniforms = _resize_uniforms(out.size, c, 0, (h, w), size, align_corners, half_pixel_centers)
        backend.dispatch(_resize_shader(kind, images.dtype), [images, out], uniforms, linear_groups(out.size))
        return out

    return kernel


def _resize_grad(kind):
    def kernel(backend, dy, size, align_corners, half_pixel_centers, input_shape):
        n, h, w, c = input_shape
        dx = backend.empty(input_shape, F32)
        if dx.size == 0:  # the temporaries below would be taken for nothing
            return dx

        def uniforms(count, inner, first):
            return _resize_uniforms(count, inner, first, (h, w), size, align_corners, half_pixel_centers)

        ranges = backend.empty((4 * (h + w),), U32)
        backend.dispatch(_ranges_shader(kind), [ranges], uniforms(h + w, 0, 0), linear_groups(h + w))
        rows = backend.empty((n, size[0], w, c), F32)  # dy summed along x first, as numpy
        shader = _resize_grad_axis_shader(kind, "x")
        backend.dispatch(shader, [dy, ranges, rows], uniforms(rows.size, c, h), linear_groups(rows.size))
        shader = _resize_grad_axis_shader(kind, "y")
        backend.dispatch(shader, [rows, ranges, dx], uniforms(dx.size, w * c, 0), linear_groups(dx.size))
        backend.free(rows)
        backend.free(ranges)
        return dx

    return kernel


# ---- pixels --------------------------------------------------------------------------------------


@functools.cache
def _unpack_rgba_shader():
    body = """  let channels = u.channels;  // byte k of pixel p's word is its channel k
  out[i] = i32((bitcast<u32>(packed[i / channels]) >> (8u * (i % channels))) & 255u);"""
    return compose_linear_shader("UnpackRGBA", body, [("packed", I32)], [("out", I32)], {"channels": "u32"})


def _unpack_rgba(backend, packed, channels):
    out = backend.empty((*packed.shape, channels), I32)
    uniforms = {"count": out.size, "channels": channels}
    backend.dispatch(_unpack_rgba_shader(), [packed, out], uniforms, linear_groups(out.size))
    return out


register_kernel("UnpackRGBA", "webgpu", _unpack_rgba)
register_kernel("ResizeBilinear", "webgpu", _resize("bilinear"))
register_kernel("ResizeBilinearGrad", "webgpu", _resize_grad("bilinear"))
register_kernel("ResizeNearestNeighbor", "webgpu", _resize("nearest"))
register_kernel("ResizeNearestNeighborGrad", "webgpu", _resize_grad("nearest"))
# ---- CropAndResize: one thread per output element (box, y, x, channel) ------------------------------------------
# Positions are computed in f32 where TF.js computes in float64: a box edge on the image's edge (1.0) can land a
# rounding error past it, so "inside" allows 2^-20 of the image's size (and the indices are clamped into it).
CROP_FNS = """
fn crop_position(low: f32, high: f32, n_in: u32, n_out: u32, o: u32) -> f32 {
  let last = f32(n_in - 1u);
  if (n_out > 1u) { return low * last + f32(o) * ((high - low) * last / f32(n_out - 1u)); }
  return 0.5 * (low + high) * last;
}
fn inside(p: f32, n_in: u32) -> bool {
  let last = f32(n_in - 1u);
  let slack = last * 9.5367431640625e-7;
  return p >= -slack && p <= last + slack;
}
fn pixel(b: u32, y: f32, x: f32, c: u32) -> f32 {
  let Y = u32(clamp(y, 0.0, f32(u.in_h - 1u)));
  let X = u32(clamp(x, 0.0, f32(u.in_w - 1u)));
  return image[((b * u.in_h + Y) * u.in_w + X) * u.channels + c];
}
"""
CROP_UNIFORMS = dict.fromkeys(("batch", "in_h", "in_w", "channels", "crop_h", "crop_w"), "u32")
CROP_UNIFORMS["extrapolation"] = "f32"


@functools.cache
def _crop_and_resize_shader(method):
    if method == "bilinear":
        value = """  let top_y = floor(y); let left_x = floor(x);
  let y_lerp = y - top_y; let x_lerp = x - left_x;
  let top_left = pixel(b, top_y, left_x, c); let top_right = pixel(b, top_y, ceil(x), c);
  let bottom_left = pixel(b, ceil(y), left_x, c); let bottom_right = pixel(b, ceil(y), ceil(x), c);
  let top = top_left + (top_right - top_left) * x_lerp;
  let bottom = bottom_left + (bottom_right - bottom_left) * x_lerp;
  out[i] = top + (bottom - top) * y_lerp;"""
    else:  # JavaScript's Math.round: halves up
        value = "  out[i] = pixel(b, floor(y + 0.5), floor(x + 0.5), c);"
    body = f"""  let c = i % u.channels;
  let ox = (i / u.channels) % u.crop_w;
  let oy = (i / u.channels / u.crop_w) % u.crop_h;
  let k = i / u.channels / u.crop_w / u.crop_h;
  let index = box_ind[k];
  if (index < 0 || u32(index) >= u.batch) {{ out[i] = 0.0; return; }}
  let b = u32(index);
  let y = crop_position(boxes[4u * k], boxes[4u * k + 2u], u.in_h, u.crop_h, oy);
  let x = crop_position(boxes[4u * k + 1u], boxes[4u * k + 3u], u.in_w, u.crop_w, ox);
  if (!inside(y, u.in_h) || !inside(x, u.in_w)) {{ out[i] = u.extrapolation; return; }}
{value}"""
    ins = [("image", F32), ("boxes", F32), ("box_ind", I32)]
    return compose_linear_shader(f"CropAndResize:{method}", body, ins, [("out", F32)], CROP_UNIFORMS, CROP_FNS)


def _crop_and_resize(backend, image, boxes, box_ind, crop_size, method, extrapolation_value):
    batch, h, w, c = image.shape
    out = backend.empty((boxes.shape[0], *crop_size, c), F32)
    uniforms = {"count": out.size, "batch": batch, "in_h": h, "in_w": w, "channels": c}
    uniforms |= {"crop_h": crop_size[0], "crop_w": crop_size[1], "extrapolation": extrapolation_value}
    shader = _crop_and_resize_shader(method)
    backend.dispatch(shader, [image, boxes, box_ind, out], uniforms, linear_groups(out.size))
    return out


register_kernel("CropAndResize", "webgpu", _crop_and_resize)
# ---- Transform: one thread per output element (image, y, x, channel), in f32 -----------------------------------
TRANSFORM_MODES = {"constant": 0, "reflect": 1, "wrap": 2, "nearest": 3}
TRANSFORM_FNS = """
fn map_coordinate(p: f32, n: u32) -> f32 {  // TF.js's mapCoord for u.fill_mode
  let len = f32(n);
  let last = len - 1.0;
  if (u.fill_mode == 0u) { return p; }
  if (u.fill_mode == 3u) { return clamp(p, 0.0, last); }
  var q = p;
  if (n <= 1u) { if (q < 0.0 || q > last) { q = 0.0; } return q; }
  if (u.fill_mode == 1u) {
    let span = 2.0 * len;
    if (q < 0.0) {
      q = span * trunc(-q / span) + q;
      q = select(-q - 1.0, q + span, q < -len);
    } else if (q > last) {
      q = q - span * trunc(q / span);
      if (q >= len) { q = span - q - 1.0; }
    }
  } else {
    if (q < 0.0) { q = q + len * (trunc(-q / last) + 1.0); } else if (q > last) { q = q - len * trunc(q / last); }
  }
  return clamp(q, 0.0, last);
}
fn pixel_or_fill(b: u32, y: f32, x: f32, c: u32) -> f32 {
  if (y < 0.0 || y >= f32(u.in_h) || x < 0.0 || x >= f32(u.in_w)) { return u.fill_value; }
  return f32(image[((b * u.in_h + u32(y)) * u.in_w + u32(x)) * u.channels + c]);
}
"""
TRANSFORM_UNIFORMS = dict.fromkeys(("in_h", "in_w", "channels", "out_h", "out_w", "per_image", "fill_mode"), "u32")
TRANSFORM_UNIFORMS["fill_value"] = "f32"


@functools.cache
def _transform_shader(interpolation, dtype):
    if interpolation == "nearest":  # JavaScript's Math.round: halves up
        value = "pixel_or_fill(b, floor(y + 0.5), floor(x + 0.5), c)"
    else:
        value = """(y0 + 1.0 - y) * ((x0 + 1.0 - x) * pixel_or_fill(b, y0, x0, c) + (x - x0) * pixel_or_fill(b, y0, x0 + 1.0, c))
    + (y - y0) * ((x0 + 1.0 - x) * pixel_or_fill(b, y0 + 1.0, x0, c) + (x - x0) * pixel_or_fill(b, y0 + 1.0, x0 + 1.0, c))"""
    store = "v" if dtype == F32 else "i32(v)"
    body = f"""  let c = i % u.channels;
  let ox = f32((i / u.channels) % u.out_w);
  let oy = f32((i / u.channels / u.out_w) % u.out_h);
  let b = i / u.channels / u.out_w / u.out_h;
  let t = b * 8u * u.per_image;
  let k = transforms[t + 6u] * ox + transforms[t + 7u] * oy + 1.0;
  var v = u.fill_value;
  if (k != 0.0) {{
    let x = map_coordinate((transforms[t] * ox + transforms[t + 1u] * oy + transforms[t + 2u]) / k, u.in_w);
    let y = map_coordinate((transforms[t + 3u] * ox + transforms[t + 4u] * oy + transforms[t + 5u]) / k, u.in_h);
    let y0 = floor(y); let x0 = floor(x);
    v = {value};
  }}
  out[i] = {store};"""
    ins = [("image", dtype), ("transforms", F32)]
    key = f"Transform:{interpolation}:{dtype}"
    return compose_linear_shader(key, body, ins, [("out", dtype)], TRANSFORM_UNIFORMS, TRANSFORM_FNS)


def _transform(backend, image, transforms, interpolation, fill_mode, fill_value, output_shape):
    batch, h, w, c = image.shape
    out = backend.empty((batch, *output_shape, c), image.dtype)
    uniforms = {"count": out.size, "in_h": h, "in_w": w, "channels": c, "out_h": output_shape[0]}
    uniforms |= {"out_w": output_shape[1], "per_image": int(transforms.shape[0] > 1), "fill_value": fill_value}
    uniforms["fill_mode"] = TRANSFORM_MODES[fill_mode]
    shader = _transform_shader(interpolation, image.dtype)
    backend.dispatch(shader, [image, transforms, out], uniforms, linear_groups(out.size))
    return out


register_kernel("Transform", "webgpu", _transform)
for _name in ("NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5"):
    register_kernel(_name, "webgpu", on_host(_name))
