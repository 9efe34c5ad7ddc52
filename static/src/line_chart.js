// A line chart of the Charts panel and the Memory lab (static/panels/charts/charts_panel.js loads it): uPlot, bundled
// by build.mjs into static/vendor/.
//
// lineChart({host, title, xLabel, series: [{label, scale?}], rightBytes?, height}) -> {setData(x, ys), destroy()}
//   host        an element the chart fills (its width follows the host's)
//   series      one line each; a series with scale: "right" goes on a second axis on the right (bytes next to counts)
//   rightBytes  the right axis counts bytes: its ticks read 12 KiB, 3.4 MiB
//   setData  x: numbers; ys: one array per series, null for a gap
// uPlot draws on a canvas, so the colours are read from the page's CSS variables (--fg, --muted, --line, --chart-N)
// when the chart is made. Its own styles come as a separate stylesheet (the CSP forbids inline <style>).
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

const css = (name, fallback) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
const PALETTE = ["#2a62c9", "#d9480f", "#2b8a3e", "#9c36b5", "#c92a2a", "#0b7285"];

const bytes = (n) => (Math.abs(n) < 1024 ? `${n} B` : Math.abs(n) < 1 << 20 ? `${+(n / 1024).toFixed(1)} KiB`
  : `${+(n / (1 << 20)).toFixed(1)} MiB`);

export function lineChart({ host, title, xLabel, series, rightBytes = false, height = 170 }) {
  const fg = css("--fg", "#1d1f23"), grid = css("--line", "#d5d8de");
  const axis = (extra) => ({ stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, ...extra });
  const right = series.some((s) => s.scale === "right");
  const chart = new uPlot(
    {
      title,
      width: Math.max(200, host.clientWidth),
      height,
      scales: { x: { time: false } },
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
      axes: [axis({ label: xLabel }), axis({}), ...(right ? [axis({
        scale: "right", side: 1, grid: { show: false }, size: rightBytes ? 70 : 50,
        ...(rightBytes ? { values: (u, ticks) => ticks.map(bytes) } : {}),
      })] : [])],
      series: [
        { label: xLabel },
        ...series.map((s, i) => ({
          label: s.label,
          scale: s.scale === "right" ? "right" : "y",
          stroke: css(`--chart-${i + 1}`, PALETTE[i % PALETTE.length]),
          width: 2,
          points: { show: false },
          spanGaps: false,
        })),
      ],
    },
    [[], ...series.map(() => [])],
    host,
  );
  const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(200, host.clientWidth), height }));
  resize.observe(host);
  return {
    setData: (x, ys) => chart.setData([x, ...ys]),
    destroy() {
      resize.disconnect();
      chart.destroy();
    },
  };
}
