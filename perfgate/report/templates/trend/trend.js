// Draws every chart of a bucket page from the JSON the page embeds: no network at view time.
"use strict";
for (const div of document.querySelectorAll("[data-chart]")) {
  const figure = JSON.parse(document.getElementById(div.dataset.chart).textContent);
  Plotly.newPlot(div, figure.data, figure.layout, { displaylogo: false, responsive: true });
}
