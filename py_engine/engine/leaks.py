"""Where tensors were made: creation and disposal sites (debug mode), and leaks() grouping live tensors by site."""

import os
from dataclasses import dataclass

from ..errors import user_frame
from ..tensor import Variable


@dataclass
class LeakSite:
    site: str
    count: int
    num_bytes: int
    shapes: list


def user_site():
    """file:line of the first caller outside py_engine."""
    f = user_frame()
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


class LeakFinder:
    def __init__(self):
        super().__init__()
        self.debug = os.environ.get("PY_ENGINE_DEBUG", "") not in ("", "0")  # record creation and disposal sites

    def name_site(self, tensor_ids, site):
        """Record `site` as where these live tensors were made: for tensors a program loads for itself (the page's
        classifier), which leaks() then names instead of an unknown site, debug mode or not."""
        for tensor_id in tensor_ids:
            if tensor_id in self.live:
                self.live[tensor_id]._created_at = site

    def leaks(self, include_variables=False):
        """Live tensors grouped by where they were created, most numerous first."""
        groups = {}
        for t in self.live.values():
            if isinstance(t, Variable) and not include_variables:
                continue
            site = t._created_at or "unknown site (call pe.set_debug(True) to record creation sites)"
            count, bufs, shapes = groups.get(site, (0, {}, []))
            bufs[id(t._buf)] = t._buf.nbytes
            if len(shapes) < 5 and t.shape not in shapes:
                shapes.append(t.shape)
            groups[site] = (count + 1, bufs, shapes)
        sites = [LeakSite(site, n, sum(bufs.values()), shapes) for site, (n, bufs, shapes) in groups.items()]
        return sorted(sites, key=lambda s: -s.count)
