"""matplotlib's backend in the worker: Agg draws, and plt.show() puts each open figure into the Output as a PNG.

static/worker.js names it with MPLBACKEND=module://playground_figures before any run, so pyplot picks it when it is
first imported. A figure is drawn at its own size in CSS pixels times the screen's device-pixel ratio (the page sends
it with each run; playground_display.pixel_ratio), so it is sharp on a high-DPI screen, and shown at its CSS size.
Its alt text is its title (the figure's, else its axes'), with its axes' labels. plt.show() shows every open figure
and closes it, in order with what the code printed; so does the end of a run for the figures still open
(playground_run.py), and a figure that is a run's last value is shown as that value (playground_display.py).
"""

import base64
import io
import sys

import js
import playground_display
from matplotlib._pylab_helpers import Gcf
from matplotlib.backends.backend_agg import FigureCanvasAgg
from pyodide.ffi import to_js

FigureCanvas = FigureCanvasAgg  # what pyplot creates figures with; its manager is matplotlib's FigureManagerBase


def _text(artist_text):
    return artist_text.strip() if artist_text else ""


def alt_text(figure):
    """The figure's title (its suptitle, else its axes' titles), then each axes' labels: what it shows, in words."""
    axes = figure.get_axes()
    suptitle = getattr(figure, "_suptitle", None)
    titles = [_text(suptitle.get_text())] if suptitle is not None else []
    titles = [t for t in titles if t] or [t for ax in axes if (t := _text(ax.get_title()))]
    parts = []
    for ax in axes:
        labels = [f"{name} {label}" for name, label in (("x:", ax.get_xlabel()), ("y:", ax.get_ylabel())) if label]
        if labels:
            parts.append(", ".join(labels))
    title = "; ".join(titles) or (f"Figure with {len(axes)} axes" if axes else "Empty figure")
    return title + (f" ({'; '.join(parts)})" if parts else "")


def figure_node(figure):
    """{"kind": "figure", "png" (base64), "alt", "width", "height" (CSS pixels)} of a figure."""
    ratio = max(1.0, float(playground_display.pixel_ratio or 1))
    width, height = figure.get_size_inches() * figure.dpi
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=figure.dpi * ratio)
    return {
        "kind": "figure",
        "png": base64.b64encode(out.getvalue()).decode("ascii"),
        "alt": alt_text(figure),
        "width": round(width),
        "height": round(height),
    }


def shown_value(figure):
    """The node of a figure that is a run's last value, closed: the end of the run must not show it again."""
    try:
        return figure_node(figure)
    finally:
        from matplotlib import pyplot

        pyplot.close(figure)


def _post(node):
    sys.stdout.flush()  # what was printed before the figure comes before it
    sys.stderr.flush()
    js.peOutput(to_js({"stream": "figure", **node}, dict_converter=js.Object.fromEntries))


def show(*args, but=None, **kwargs):
    """plt.show(): each open figure (but `but`) into the Output, then closed; `block` and other arguments mean
    nothing here."""
    for manager in Gcf.get_all_fig_managers():
        figure = manager.canvas.figure
        if figure is but:
            continue
        try:
            _post(figure_node(figure))
        finally:
            Gcf.destroy(manager)
