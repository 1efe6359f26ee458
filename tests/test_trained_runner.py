

def test_a_budget_too_small_for_any_full_check_runs_nothing(tmp_path):
    from theorylab.trained.runner import run

    lines: list[str] = []
    assert run("full", "cpu", 1.0, str(tmp_path / "runs.sqlite"), resume=True, out=lines.append) == 0
    assert len(lines) == len(CATALOG) and all(line.startswith("later") for line in lines)
