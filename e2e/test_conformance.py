"""The webgpu conformance suite (py_engine.testing.conformance, shipped in the wheel) run inside the page."""

import json


def test_conformance_suite_passes_on_webgpu_in_the_page(gpu_page):
    report = gpu_page.run(
        """
        import time
        from py_engine.testing.conformance import all_cases, run_suite
        started = time.perf_counter()
        report = await run_suite("webgpu")
        {**report, "total": len(all_cases()), "seconds": time.perf_counter() - started, "backend": pe.get_backend()}
        """,
        timeout_s=1800,
    )
    print(f"conformance in the page: {report['passed']}/{report['total']} passed in {report['seconds']:.0f} s")
    assert report["total"] > 0 and report["backend"] == "webgpu"
    assert report["failed"] == {}, json.dumps(report["failed"], indent=1)[:20000]
    assert report["passed"] == report["total"]
