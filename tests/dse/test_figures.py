"""The sweep's figures (dse/figures.py) say which input size their model ran at."""

from dse import figures


def test_every_sweep_figure_title_names_the_resolution(monkeypatch, tmp_path):
    titles = {}

    def capture(fig, path):
        texts = [fig._suptitle.get_text()] if fig._suptitle else []
        titles[path.name] = texts + [ax.get_title() for ax in fig.axes]
        figures._pyplot().close(fig)
        return path

    monkeypatch.setattr(figures, "_save", capture)
    rows = [{"model": "resnet18", "status": "ok", "latency_s": 0.01 * k, "energy_j": 0.002 * k, "lut": 1000 * k,
             "ff": 2000 * k, "dsp": 10 * k, "bram36": 5 * k, "part_use": 0.1 * k, "fits_xc7z020": k < 3,
             "clock_met": True, "LOG_BLOCK": 3 + k % 2} for k in (1, 2, 3, 4)]
    paths = figures.draw_all(rows, ["LOG_BLOCK"], tmp_path, "xc7z020", ("latency_s",), {"resnet18": (64, 64)})
    assert sorted(p.name for p in paths) == sorted(titles) and len(titles) == 3
    for name, texts in titles.items():
        assert any(t.startswith("resnet18 at 64x64: ") for t in texts), (name, texts)
    assert figures.about("m.onnx", None) == "m.onnx"


def test_a_transformer_input_is_named_by_its_whole_shape():
    """A token input (1, tokens, channels) has no H x W: the title gives its shape (an encoder
    block's sweep once failed here with an IndexError)."""
    from dse.report import input_size

    assert input_size((1, 3, 224, 224)) == (224, 224)
    assert input_size((1, 128, 768)) == (1, 128, 768)
    assert figures.about("block.onnx", input_size((1, 128, 768))) == "block.onnx at 1x128x768"


def test_the_sweep_folder_readme_says_what_each_file_is():
    from dse.report import sweep_readme

    outputs = [f"out/{name}" for name in ("points.csv", "pareto.csv", "pareto_resnet18.png",
                                          "sensitivity_resnet18.png", "energy_resnet18.png", "summary.json",
                                          "README.md")]
    summary = {"space": "examples/sweep_resnet18.json", "points": 4, "ok": 3, "models": ["resnet18"],
               "search": "grid", "part": "xc7z020", "objectives": ["latency_s", "lut"], "outputs": outputs}
    text = sweep_readme(summary)
    assert text.startswith("# vdla sweep sweep_resnet18.json: results")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [o.split("/")[1] for o in outputs]
    assert all(not row.endswith("|  |") for row in rows)  # each described
