/**
 * uPlot's colours from the page's CSS variables, so charts follow the theme (static/css/app.css
 * light, static/css/dark.css under prefers-color-scheme: dark): axis labels and ticks in
 * `--chart-axis`, grid lines in `--chart-grid`. uPlot paints on a canvas and takes colours as
 * options, not from CSS; a chart reads them when it is built.
 */

/** Light defaults, for a page without the variables (and for tests without a document). */
export const LIGHT_CHART = Object.freeze({ axis: "#3d444d", grid: "rgba(0,0,0,0.08)" });

/** The chart colours of `root`'s computed style: `{axis, grid}` (LIGHT_CHART where a variable is unset). */
export function chartColors(style = globalThis.document ? getComputedStyle(document.documentElement) : null) {
  const read = (name, fallback) => style?.getPropertyValue(name)?.trim() || fallback;
  return { axis: read("--chart-axis", LIGHT_CHART.axis), grid: read("--chart-grid", LIGHT_CHART.grid) };
}

/**
 * `axes` (uPlot axis options) with the theme's colours: `stroke` (labels and values), the grid's
 * and the ticks' strokes; what an axis sets itself wins (a hidden grid stays hidden).
 */
export function themedAxes(axes, colors = chartColors()) {
  return axes.map((axis) => ({
    stroke: colors.axis,
    ...axis,
    grid: { stroke: colors.grid, width: 1, ...axis.grid },
    ticks: { stroke: colors.grid, width: 1, ...axis.ticks },
  }));
}
