"""Warm-up in the page: pe.warmup compiles every pipeline an op program needs, so running it compiles none."""


def test_warmup_compiles_the_pipelines_and_the_run_compiles_none(fresh_gpu_page):
    got = fresh_gpu_page.run(
        """
        x = pe.tensor(np.linspace(-2, 2, 300, dtype=np.float32).reshape(10, 30))
        w = pe.tensor(np.linspace(1, -1, 210, dtype=np.float32).reshape(30, 7))

        def program(x, w):
            h = pe.relu(pe.matmul(x, w) + 0.5)
            return (pe.exp(-h) * h).mean(axis=0)

        s0 = pe.stats()
        new = await pe.warmup(program, x, w)
        s1 = pe.stats()
        y = pe.tidy(program, x, w)
        values = (await y.data()).tolist()
        s2 = pe.stats()
        xn, wn = await x.data(), await w.data()
        h = np.maximum(xn.reshape(10, 30) @ wn.reshape(30, 7) + 0.5, 0)
        want = (np.exp(-h) * h).mean(axis=0).tolist()
        {"new": new, "s0": s0, "s1": s1, "s2": s2, "values": values, "want": want,
         "tensors": pe.memory().num_tensors}
        """
    )
    s0, s1, s2 = got["s0"], got["s1"], got["s2"]
    assert got["new"] >= 4  # matmul, add, relu, neg, exp, mul, mean: fused or not, several pipelines
    assert s1["pipeline_compiles"] - s0["pipeline_compiles"] == got["new"]
    assert s1["dispatches"] == s0["dispatches"] and s1["readbacks"] == s0["readbacks"]  # nothing ran
    assert s2["pipeline_compiles"] == s1["pipeline_compiles"]  # the real run compiled nothing new
    assert s2["dispatches"] > s1["dispatches"]
    assert max(abs(a - b) for a, b in zip(got["values"], got["want"])) < 1e-5
    assert got["tensors"] == 3  # x, w, y: the dry run released its tensors
