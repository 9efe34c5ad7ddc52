// The page's panels, one line each: importing a panel's module registers it (static/page/panels.js). Their tabs are
// in this order (the server puts each panel's tab, section and stylesheet into the page: app/page_panels.py), and they
// start in it.
import "./examples/examples_panel.js";
import "./files/files_panel.js";
import "./charts/charts_panel.js";
import "./memory_lab/memory_lab_panel.js";
import "./classify/classify_panel.js";
import "./vision/vision_panel.js";
import "./teach/teach_panel.js";
