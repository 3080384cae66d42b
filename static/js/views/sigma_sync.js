/**
 * What the two sigma.js views share: the browser builds loaded from static/vendor
 * (`window.Sigma`, `window.graphology`), and syncing a graphology graph to a wanted set of
 * nodes and edges so that sigma only processes what changed.
 */

/** The sigma and graphology browser builds; throws when the vendor scripts are missing. */
export function vendor() {
  const { Sigma, graphology } = globalThis;
  if (!Sigma || !graphology) {
    throw new Error("sigma.js and graphology are not loaded: run `make vendor` (static/vendor/)");
  }
  return { Sigma, Graph: graphology.Graph ?? graphology };
}

/** An empty directed multigraph (two events may be linked by edges of several types). */
export function createGraph() {
  const { Graph } = vendor();
  return new Graph({ type: "directed", multi: true, allowSelfLoops: false });
}

/** Shallow equality of two attribute objects. */
export function sameAttributes(a, b) {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const k of keys) if (a[k] !== b[k]) return false;
  return true;
}

/**
 * Above this many changed nodes and edges a view builds a new graph and hands it to sigma
 * (`setGraph`: one full refresh) instead of emitting one graph event per change.
 */
export const BULK_CHANGES = 300;

/**
 * Make a graph that holds exactly `nodes` and `edges`: `graph` itself, updated in place
 * (new items added, changed attributes replaced, gone items dropped), or, past `bulkAbove`
 * changes, a new graph built from scratch. Callers give a new graph to sigma (`setGraph`).
 * @param {object} graph a graphology graph
 * @param {Map<string, object>} nodes key -> node attributes
 * @param {Map<string, {source: string, target: string, attributes: object}>} edges
 * @returns {{graph: object, changes: number}}
 */
export function syncGraph(graph, nodes, edges, bulkAbove = BULK_CHANGES) {
  const goneEdges = graph.filterEdges((key) => !edges.has(key));
  const goneNodes = graph.filterNodes((key) => !nodes.has(key));
  const nodeChanges = [];
  for (const [key, attributes] of nodes) {
    if (!graph.hasNode(key) || !sameAttributes(graph.getNodeAttributes(key), attributes)) nodeChanges.push(key);
  }
  const edgeChanges = [];
  for (const [key, edge] of edges) {
    if (!graph.hasEdge(key) || !sameAttributes(graph.getEdgeAttributes(key), edge.attributes)) edgeChanges.push(key);
  }
  const changes = goneEdges.length + goneNodes.length + nodeChanges.length + edgeChanges.length;
  if (changes > bulkAbove) {
    const fresh = createGraph();
    for (const [key, attributes] of nodes) fresh.addNode(key, attributes);
    for (const [key, { source, target, attributes }] of edges) fresh.addDirectedEdgeWithKey(key, source, target, attributes);
    return { graph: fresh, changes };
  }
  for (const key of goneEdges) graph.dropEdge(key);
  for (const key of goneNodes) graph.dropNode(key);
  for (const key of nodeChanges) {
    if (graph.hasNode(key)) graph.replaceNodeAttributes(key, nodes.get(key));
    else graph.addNode(key, nodes.get(key));
  }
  for (const key of edgeChanges) {
    const { source, target, attributes } = edges.get(key);
    if (graph.hasEdge(key)) graph.replaceEdgeAttributes(key, attributes);
    else graph.addDirectedEdgeWithKey(key, source, target, attributes);
  }
  return { graph, changes };
}

/**
 * Apply a known set of changes to `graph` in place: `nodes` / `edges` map keys to their
 * wanted attributes (edges: `{source, target, attributes}`), or to null for items to drop.
 * Unchanged attributes are left alone; edges whose endpoints are missing are skipped.
 * @returns {number} how many items changed
 */
export function applyChanges(graph, nodes, edges) {
  let changes = 0;
  for (const [key, edge] of edges) {
    if (edge === null && graph.hasEdge(key)) {
      graph.dropEdge(key);
      changes += 1;
    }
  }
  for (const [key, attributes] of nodes) {
    if (attributes === null) {
      if (graph.hasNode(key)) {
        graph.dropNode(key);
        changes += 1;
      }
    } else if (!graph.hasNode(key)) {
      graph.addNode(key, attributes);
      changes += 1;
    } else if (!sameAttributes(graph.getNodeAttributes(key), attributes)) {
      graph.replaceNodeAttributes(key, attributes);
      changes += 1;
    }
  }
  for (const [key, edge] of edges) {
    if (edge === null) continue;
    const { source, target, attributes } = edge;
    if (graph.hasEdge(key)) {
      if (!sameAttributes(graph.getEdgeAttributes(key), attributes)) {
        graph.replaceEdgeAttributes(key, attributes);
        changes += 1;
      }
    } else if (graph.hasNode(source) && graph.hasNode(target)) {
      graph.addDirectedEdgeWithKey(key, source, target, attributes);
      changes += 1;
    }
  }
  return changes;
}

/** Keep `node` of `sigma` in view: pan the camera to it when it is off screen. */
export function panTo(sigma, node) {
  const data = sigma.getNodeDisplayData(node);
  if (!data) return;
  const { width, height } = sigma.getDimensions();
  const at = sigma.framedGraphToViewport(data);
  const margin = 24;
  if (at.x >= margin && at.x <= width - margin && at.y >= margin && at.y <= height - margin) return;
  const camera = sigma.getCamera();
  camera.animate({ x: data.x, y: data.y }, { duration: 250 });
}
