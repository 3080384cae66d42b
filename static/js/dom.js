/** lib/dom.js's helpers at this path, for review.js (which imports "./dom.js"). */
export { csrfToken, el } from "./lib/dom.js";
