"""The Memory lab's table of live tensors (static/panels/memory_lab/memory_lab_panel.js): pe.leaks() as plain data, each
creation site with its line of code (the page's runs keep their sources in linecache)."""

import linecache

import py_engine as pe


def leak_sites() -> dict:
    sites = [
        {
            "site": s.site,
            "count": s.count,
            "bytes": s.num_bytes,
            "shapes": [list(shape) for shape in s.shapes],
            "source": source_line(s.site),
        }
        for s in pe.leaks()
    ]
    return {"debug": pe.ENGINE.debug, "sites": sites}


def source_line(site: str) -> str:
    """The line of code at `site` ("file:line"), stripped; "" when the site names no line or it is unknown."""
    file, _, line = site.rpartition(":")
    return linecache.getline(file, int(line)).strip() if line.isdigit() else ""
