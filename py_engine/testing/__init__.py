"""Tools for checking backends against the numpy reference; shipped in the wheel so the browser can run them."""
