"""The report: every file written, the Markdown's tables and numbers, the HTML, the figures' helpers."""

from __future__ import annotations

import base64
import re
import sqlite3

import pandas as pd
import pytest

from textcause.analysis.agreement import narrower_than_ad
from textcause.analysis.inference import compare, corrected_interval, seed_summary
from textcause.analysis.names import model_labels, model_order
from textcause.analysis.simulated import simulate_results
from textcause.cli.report import report_main
from textcause.reports.figures import panel_points, resolve_interval
from textcause.reports.markup import Bullets, Heading, Image, Para, Table, to_html, to_markdown
from textcause.reports.report import write_report
from textcause.reports.sections import mean_sd

TASKS = {"linguistic_complexity": 2, "placebo": 1, "order_of_text": 2}
MODELS = ("oracle", "lr_bigram_binary", "sherbert")
CORPORA = ("reddit", "twitter")


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    return simulate_results(corpora=CORPORA, task_levels=TASKS, models=MODELS, n_seeds=3, n_failed=1, seed=1)


@pytest.fixture(scope="module")
def report(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    written = write_report(results, out)
    return (
        out,
        written,
        (out / "report.md").read_text(encoding="utf-8"),
        (out / "report.html").read_text(encoding="utf-8"),
    )


def test_every_expected_file_is_written(report):
    out, written, _, _ = report
    stems = [
        f"{fig}_{c}"
        for c in CORPORA
        for fig in ("fig4_tasks", "fig6_estimators", "fig7_propensity", "fig11_order_of_text")
    ]
    stems.append("fig10_agreement_reddit_twitter")
    assert sorted(written["figures"]) == sorted(stems)
    for stem in stems:
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (out / f"{stem}.svg").read_text(encoding="utf-8")[:2000]
    for name in ("report.md", "report.html", "seed_summary.csv"):
        assert (out / name).stat().st_size > 0
    assert not list(out.glob("*.tmp"))


def test_markdown_tables_and_numbers(report, results):
    _, _, md, _ = report
    for header in (
        "| Model | Level | Seeds | Treatment accuracy | IPTW bias | Stratified bias | Matching bias | RMSE (Stratified) | Coverage (Stratified) |",
        "## Method comparison across seeds",
        "| Corpus | Model | Adjusted better | Unadjusted better | No significant difference | Not enough seeds | Note |",
        "| Corpus | Model | Task | Level | Seeds | mean \\|bias\\| A | mean \\|bias\\| B | diff A - B | t (corrected) | p (corrected) | p (Holm) | p (naive) | Verdict |",
        "## Placebo test: false discoveries",
        "## Coverage of the true ATE",
        "## Appendix A: the paper's bias heuristic (not a bound)",
        "## Appendix G: reddit vs twitter",
        "## Failed cells",
        "percentile bootstrap over test units",
        "![Treatment accuracy and bias by task (Fig. 4)](fig4_tasks_reddit.png)",
    ):
        assert header in md, header
    summary = seed_summary(results)
    cell = summary[
        (summary["corpus"] == "reddit")
        & (summary["task"] == "linguistic_complexity")
        & (summary["level"] == 2)
        & (summary["model"] == "lr_bigram_binary")
        & (summary["estimator"] == "stratified")
    ].iloc[0]
    assert "| LR 1,2-gram | 2 | 3 | " in md
    assert mean_sd(cell["mean_bias"], cell["sd_bias"]) in md
    placebo = summary[
        (summary["corpus"] == "reddit")
        & (summary["task"] == "placebo")
        & (summary["model"] == "oracle")
        & (summary["estimator"] == "ipw")
    ].iloc[0]
    assert (
        f"| reddit | Oracle | IPTW | Placebo Test 1 | 3 | {placebo['mean_ate']:+.3f} | {placebo['false_discovery_rate']:.2f} "
        f"[{placebo['false_discovery_ci_low']:.2f}, {placebo['false_discovery_ci_high']:.2f}] |" in md
    )
    ad = narrower_than_ad(results).set_index("estimator")
    assert list(ad.index) == ["ipw", "all"] and ad.loc["all", "n"] == ad.loc["ipw", "n"] > 0
    assert f"narrower than the heuristic's interval in {ad.loc['all', 'text']} (IPTW rows only" in md
    assert "not a bound" in md and "| Stratified | " not in md.split("## Appendix A")[1].split("##")[0]
    cmp = compare(results[results["corpus"] == "reddit"], "sherbert:stratified", "sherbert:unadjusted")
    first = cmp.iloc[0]
    assert (
        f"| reddit | SHERBERT | Linguistic Complexity | 1 | 3 | {first['mean_a']:.3f} | {first['mean_b']:.3f} |" in md
    )
    # The failed cell (the grid's last one) is listed with its error and left out of the summaries.
    assert "| twitter | order_of_text | 2 | sherbert | 2 |" in md and "simulated failure (out of memory)" in md


def test_html_is_the_same_content(report):
    _, _, md, page = report
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    # Every figure is embedded (the page is one file), none is linked.
    assert '<img src="data:image/png;base64,' in page and 'src="fig' not in page
    assert page.count('<img src="data:image/png;base64,') == len(re.findall(r"^!\[", md, flags=re.M)) == 9
    assert 'alt="Treatment accuracy and bias by task (Fig. 4)">' in page
    n_tables = sum(1 for line in md.splitlines() if re.match(r"^\| :?---:? \|", line))
    assert n_tables > 10 and page.count("<table>") == n_tables
    assert '<th class="l">Model</th>' in page and "<h2>Failed cells</h2>" in page
    assert "<strong>Stratified</strong>" in page


def test_report_main_from_sqlite_one_corpus(tmp_path, capsys):
    df = simulate_results(task_levels={"placebo": 1}, models=("oracle", "lr_lda"), n_seeds=2)
    db = tmp_path / "results.db"
    with sqlite3.connect(db) as con:
        df.to_sql("results", con, index=False)
    out = tmp_path / "rep"
    result = report_main(["--db", str(db), "--out", str(out), "--formats", "png"])
    assert "wrote" in capsys.readouterr().out
    assert sorted(p.name for p in out.glob("*.png")) == [
        "fig4_tasks_reddit.png",
        "fig6_estimators_reddit.png",
        "fig7_propensity_reddit.png",
    ]
    md = result["markdown"].read_text(encoding="utf-8")
    assert "Appendix G" not in md and "None: every cell ran." in md


def test_one_seed_report_uses_bootstrap_intervals(tmp_path):
    df = simulate_results(task_levels={"linguistic_complexity": 1}, models=("lr_lda",), n_seeds=1)
    summary = seed_summary(df)
    assert resolve_interval(summary, "auto") == "bootstrap"
    result = write_report(df, tmp_path, formats=("png",))
    md = result["markdown"].read_text(encoding="utf-8")
    assert "percentile bootstrap over test units (per cell" in md
    assert "not enough seeds" in md


def test_panel_points_intervals(results):
    summary = seed_summary(results)
    pts = panel_points(summary, "linguistic_complexity", "stratified", "bias", "seeds")
    ref = summary[(summary["task"] == "linguistic_complexity") & (summary["estimator"] == "stratified")]
    r = ref.iloc[0]
    lo, hi = corrected_interval(r["mean_bias"], r["sd_bias"], r["n_seeds"], r["test_train_ratio"])
    first = pts[(pts["model"] == r["model"]) & (pts["level"] == r["level"])].iloc[0]
    assert (first["lo"], first["hi"]) == pytest.approx((lo, hi))
    boot = panel_points(summary, "linguistic_complexity", "stratified", "bias", "bootstrap")
    assert boot.iloc[0]["lo"] == pytest.approx(r["mean_ci_low"] - r["true_ate"])
    acc = panel_points(summary, "linguistic_complexity", None, "treatment_accuracy", "bootstrap")
    assert acc["lo"].isna().all() and len(acc) == len(MODELS) * 2
    with pytest.raises(ValueError, match="'interval' parameter of resolve_interval must be one of"):
        resolve_interval(summary, "wide")


def test_names():
    assert model_order(["sherbert", "zeta", "oracle", "lr_lda"]) == ["oracle", "lr_lda", "sherbert", "zeta"]
    assert model_labels(["sherbert_pooled", "order_count"]) == {
        "sherbert_pooled": "SHERBERT",
        "order_count": "OrderCountNet (ours)",
    }
    assert model_labels(["sherbert", "sherbert_pooled"]) == {
        "sherbert": "SHERBERT (sherbert)",
        "sherbert_pooled": "SHERBERT (sherbert_pooled)",
    }


def test_markup_escapes():
    blocks = [
        Heading(1, "T"),
        Para("a <b> `x`"),
        Bullets(["one"]),
        Table(["h|1", "v"], [["x|y", "1"]]),
        Image("f.png", "alt"),
    ]
    md = to_markdown(blocks)
    assert "| h\\|1 | v |\n| :--- | ---: |\n| x\\|y | 1 |" in md and "![alt](f.png)" in md
    page = to_html(blocks, "t")
    assert "a &lt;b&gt; <code>x</code>" in page and '<td class="l">x|y</td>' in page
    with pytest.raises(ValueError, match="Unknown report block"):
        to_markdown(["text"])
    assert '<img src="f.png" alt="alt">' in page  # no base folder: linked by relative path


def test_html_embeds_its_figures(tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
    (tmp_path / "f.png").write_bytes(png)
    (tmp_path / "g.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    (tmp_path / "h.pdf").write_bytes(b"%PDF-1.4")
    blocks = [Image("f.png", "a png"), Image("g.svg", "an svg"), Image("h.pdf", "a pdf")]
    page = to_html(blocks, "t", base_dir=tmp_path)
    assert f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" alt="a png">' in page
    svg = base64.b64encode((tmp_path / "g.svg").read_bytes()).decode()
    assert f'<img src="data:image/svg+xml;base64,{svg}" alt="an svg">' in page
    assert '<a href="h.pdf">a pdf</a>' in page  # a browser cannot show a PDF inline: linked
    assert to_markdown(blocks).startswith("![a png](f.png)")  # the Markdown still links the files
    with pytest.raises(ValueError, match=r"figure .*missing.png does not exist"):
        to_html([Image("missing.png", "x")], "t", base_dir=tmp_path)


def test_svg_only_report_embeds_svg(tmp_path):
    df = simulate_results(task_levels={"placebo": 1}, models=("oracle", "lr_lda"), n_seeds=2)
    written = write_report(df, tmp_path, formats=("svg",))
    md, page = written["markdown"].read_text(encoding="utf-8"), written["html"].read_text(encoding="utf-8")
    assert "(fig4_tasks_reddit.svg)" in md and ".png" not in md
    assert '<img src="data:image/svg+xml;base64,' in page and "image/png" not in page


def test_report_when_every_cell_failed(tmp_path):
    df = simulate_results(task_levels={"placebo": 1}, models=("oracle",), n_seeds=2)
    df = df.drop_duplicates("seed").assign(status="failed", ate=float("nan"), estimator=None, error="CUDA error")
    assert seed_summary(df).empty
    md = write_report(df, tmp_path, formats=("png",))["markdown"].read_text(encoding="utf-8")
    assert "**No cell produced an estimate**" in md
    assert "| reddit | placebo | 1 | oracle | 1 | - | CUDA error |" in md
    assert not list(tmp_path.glob("*.png"))


def test_report_has_the_findings_and_their_rules(report, results):
    from textcause.analysis.findings import RULES, findings_table

    _, _, md, page = report
    assert "## Findings" in md and "| Finding (the paper) | Corpus | Verdict | Rule | Evidence |" in md
    table = findings_table(results)
    for r in table.itertuples():  # each verdict with its rule beside it, and the paper's sentence
        cell = f"| {r.finding} ({r.paper}) | {r.corpus} | **{r.verdict}** | {RULES[r.key]} |"
        assert cell.replace("|", "\\|").replace("\\| ", "| ", 1) in md or cell in md.replace("\\|", "|")
    assert md.index("## Findings") < md.index("## Results on reddit")
    assert "<h2>Findings</h2>" in page


def test_seed_captions_count_the_rows_shown(report, results):
    """Seed counts from the rows shown: "2 to 3 seeds" (one failed), the placebo rows' 3 seeds, not 5 or "3 to 3"."""
    _, _, md, _ = report
    assert "- Seeds per method and task level: 2 to 3 seeds (each seed redraws" in md  # one seed failed
    assert "Placebo test: share of the seeds (3 seeds per method) whose 95% interval excludes" in md
    assert "with 3 seeds the rate moves in steps of 0.33, and 0 of 3 is compatible with a true rate up to 0.71." in md
    assert "steps of 0.2" not in md and "3 to 3" not in md


@pytest.fixture(scope="module")
def two_corpora_db(results, tmp_path_factory):
    db = tmp_path_factory.mktemp("db") / "results.db"
    with sqlite3.connect(db) as con:
        results.to_sql("results", con, index=False)
    return db


def test_report_main_keeps_only_the_named_corpus(two_corpora_db, tmp_path, capsys):
    out = tmp_path / "rep"
    result = report_main(["--db", str(two_corpora_db), "--corpus", "twitter", "--out", str(out), "--formats", "png"])
    assert "wrote" in capsys.readouterr().out
    assert sorted(result["figures"]) == [
        f"{fig}_twitter" for fig in ("fig11_order_of_text", "fig4_tasks", "fig6_estimators", "fig7_propensity")
    ]
    md = result["markdown"].read_text(encoding="utf-8")
    assert "corpora: twitter;" in md and "(corpora twitter)" in md
    assert "reddit" not in md and "Appendix G" not in md
    summary = pd.read_csv(result["summary"])
    assert set(summary["corpus"]) == {"twitter"}
    both = write_report(two_corpora_db, tmp_path / "both", formats=("png",), corpora=["reddit", "twitter"])
    assert "## Appendix G: reddit vs twitter" in both["markdown"].read_text(encoding="utf-8")


def test_report_of_an_unknown_corpus_is_one_sentence(two_corpora_db, tmp_path, capsys):
    from textcause.cli.main import main

    code = main(["report", "--db", str(two_corpora_db), "--corpus", "blogs", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "error: No results for corpus 'blogs'; the table has the corpora ['reddit', 'twitter'].\n"
    assert not (tmp_path / "r").exists()  # nothing written
    with pytest.raises(ValueError, match=r"No results for corpora \['blogs', 'x'\]; the table has the corpora"):
        write_report(two_corpora_db, tmp_path / "r", corpora=["blogs", "twitter", "x"])
    with pytest.raises(ValueError, match="The 'corpora' parameter of write_report must be a non-empty list"):
        write_report(two_corpora_db, tmp_path / "r", corpora=[])
