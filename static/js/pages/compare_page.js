/**
 * Entry of the compare page (templates/traces/compare.html): starts panels/compare.js's view on
 * `#compare-app`. For browser tests: `window.swarmscopeCompare` = {left, right (the two
 * TraceModels), ready (a Promise), align(mode) (`alignTraces` of the two)}.
 */

import { alignTraces, ComparePage } from "../panels/compare.js";

const app = globalThis.document?.getElementById("compare-app");
if (app) {
  const page = new ComparePage(app);
  window.swarmscopeCompare = {
    left: page.left, right: page.right, ready: page.ready, align: (mode) => alignTraces(page.left, page.right, mode),
  };
}
