// Draw every chart of the page: Vega-Lite spec -> Vega view, SVG renderer, into its <div>.
// window.pcsRendered resolves to the ids drawn (the browser test and the screenshot script wait for it);
// a chart that fails to draw logs a console error and shows the message in its box.
(function () {
  "use strict";
  var specs = JSON.parse(document.getElementById("pcs-charts").textContent);
  function draw(el) {
    var id = el.getAttribute("data-chart");
    var vg = vegaLite.compile(specs[id]).spec;
    var view = new vega.View(vega.parse(vg), {renderer: "svg", container: el, hover: true});
    return view.runAsync().then(function () { return id; });
  }
  var boxes = Array.prototype.slice.call(document.querySelectorAll("div.chart[data-chart]"));
  window.pcsRendered = Promise.all(boxes.map(function (el) {
    return Promise.resolve().then(function () { return draw(el); }).catch(function (err) {
      el.textContent = "chart not drawn: " + err;
      console.error("pcs: chart " + el.getAttribute("data-chart") + ": " + err);
      throw err;
    });
  }));
})();
