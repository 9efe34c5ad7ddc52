// The page's panels, one line each: importing a panel's module registers it (static/page/panels.js). They start in
// this order; their tabs are in static/index.html's order.
import "./charts/charts_panel.js";
import "./memory_lab/memory_lab_panel.js";
import "./examples/examples_panel.js";
import "./files/files_panel.js";
import "./classify/classify_panel.js";
import "./teach/teach_panel.js";
import "./vision/vision_panel.js";
