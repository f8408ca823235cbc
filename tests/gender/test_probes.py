"""Table 1's probes, the W lists and table 3's gendered words (no model needed)."""

from __future__ import annotations

import pytest

from textcause.gender.probes import (
    MASK,
    Probe,
    ProbeSpec,
    WList,
    builtin_w_lists,
    load_probe_spec,
    load_w_list,
    make_probes,
)
from textcause.gender.words import GenderedWords, load_gendered_words

PAPER_TENSES = ("was", "is", "will be")
PAPER_STAGES = ("a child", "a kid", "an adolescent", "a teenager", "an adult", "all grown up")


def test_the_spec_is_the_papers_table_1():
    spec = load_probe_spec()
    assert spec.tenses == PAPER_TENSES
    assert spec.life_stages == PAPER_STAGES
    assert spec.templates["date"] == ("{mask} {verb} {life_stage} in {w}.", "In {w}, {mask} {verb} {life_stage}.")
    assert spec.templates["place"] == spec.templates["date"]
    assert spec.templates["subreddit"] == ("{mask} {verb} {life_stage}. {w}.",)


@pytest.mark.parametrize(
    "name, category, n_values, n_probes",
    [
        ("years", "date", 22, 792),  # 1801, 1811, ..., 2011: 36 probes a year (figure 2a)
        ("countries", "place", 20, 720),  # appendix B.1: 36 probes a country (figure 2b)
        ("subreddits", "subreddit", 61, 1098),  # appendix B.2: 18 probes a subreddit (figure 2c)
    ],
)
def test_probe_counts_are_templates_x_tenses_x_stages_x_w(name, category, n_values, n_probes):
    spec = load_probe_spec()
    w = load_w_list(name)
    probes = make_probes(w, spec)
    assert (w.category, len(w.values)) == (category, n_values)
    assert len(probes) == len(spec.templates[category]) * len(spec.tenses) * len(spec.life_stages) * len(w.values)
    assert len(probes) == n_probes
    assert len({p.text for p in probes}) == n_probes
    assert all(p.text.count(MASK) == 1 for p in probes)


def test_builtin_lists_hold_the_papers_values():
    assert builtin_w_lists() == ["countries", "subreddits", "years"]
    years = load_w_list("years")
    assert (years.values[0], years.values[-1]) == ("1801", "2011")
    assert years.numbers == tuple(float(y) for y in range(1801, 2012, 10))
    countries = load_w_list("countries")
    assert countries.values[:2] == ("Afghanistan", "Yemen") and countries.values[-1] == "Iceland"
    assert countries.numbers is None
    subs = load_w_list("subreddits")
    assert subs.values[0] == "GlobalOffensive" and subs.values[-1] == "relationships"
    assert "reddit.com" in subs.values and subs.numbers is None


def test_a_probe_knows_where_it_comes_from():
    probes = make_probes(load_w_list("years"))
    p = probes[36 + 18 + 6 * 2 + 3]  # second year, second template, tense "will be", fourth stage
    assert (p.w_category, p.w_list, p.w_value, p.w_index, p.w_number) == ("date", "years", "1811", 1, 1811.0)
    assert (p.template_index, p.tense, p.life_stage) == (1, "will be", "a teenager")
    assert p.text == "In 1811, {mask} will be a teenager."
    assert p.render("[MASK]") == "In 1811, [MASK] will be a teenager."
    assert p.render("<mask>") == "In 1811, <mask> will be a teenager."
    assert p.frame == (1, "will be", "a teenager")
    sub = make_probes(load_w_list("subreddits"))[0]
    assert sub.render("[MASK]") == "[MASK] was a child. GlobalOffensive."


def test_user_lists_and_files(tmp_path):
    w = load_w_list(["1900", "1950", "2000"])
    assert (w.name, w.category, w.numbers) == ("custom", "date", (1900.0, 1950.0, 2000.0))
    w = load_w_list(["Paris", "Lagos"], category="subreddit", name="cities")
    assert (w.name, w.category, w.numbers) == ("cities", "subreddit", None)
    assert len(make_probes(w)) == 1 * 3 * 6 * 2
    f = tmp_path / "towns.txt"
    f.write_text("# towns\nOslo\n\nLima\nSana'a\n", encoding="utf-8")
    w = load_w_list(f)
    assert (w.name, w.category, w.values) == ("towns", "place", ("Oslo", "Lima", "Sana'a"))
    y = tmp_path / "decades.yaml"
    y.write_text("category: date\nrange: {start: 1900, stop: 1930, step: 10}\n", encoding="utf-8")
    assert load_w_list(y).values == ("1900", "1910", "1920", "1930")


def test_a_replaced_spec(tmp_path):
    f = tmp_path / "spec.yaml"
    f.write_text(
        'tenses: ["was"]\nlife_stages: ["a baby", "a kid"]\n'
        'templates: {date: ["{mask} {verb} {life_stage} around {w}."]}\n',
        encoding="utf-8",
    )
    spec = load_probe_spec(f)
    probes = make_probes(load_w_list(["1900", "2000"]), spec)
    assert [p.text for p in probes][:2] == ["{mask} was a baby around 1900.", "{mask} was a kid around 1900."]
    assert len(probes) == 4


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda: load_w_list("planets"),
            r"Unknown W list 'planets': use one of \['countries', 'subreddits', 'years'\]",
        ),
        (lambda: load_w_list(["only"]), "has 1 values: a slope needs at least two"),
        (lambda: load_w_list(["a", "b", "a"]), "lists 'a' more than once"),
        (lambda: make_probes(load_w_list(["a", "b"], category="sport")), "no templates for the W category 'sport'"),
        (lambda: load_probe_spec("/nonexistent/spec.yaml"), "does not exist"),
        (
            lambda: ProbeSpec(
                templates={"date": ("{verb} {life_stage} {w}.",)}, tenses=("is",), life_stages=("a kid",)
            ),
            "must hold '{mask}' once",
        ),
        (
            lambda: ProbeSpec(templates={"date": ("{mask} {verb} {life_stage} {w}.",)}, tenses=(), life_stages=("x",)),
            "'tenses' of a probe spec must be a non-empty list",
        ),
        (lambda: WList(name="x", category="date", values=("1", "2"), numbers=(1.0,)), "has 1 numbers for 2 values"),
    ],
)
def test_bad_input_is_one_sentence(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_an_empty_w_file_and_a_bad_range(tmp_path):
    f = tmp_path / "empty.txt"
    f.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has no values: write one value per line"):
        load_w_list(f)
    y = tmp_path / "bad.yaml"
    y.write_text("range: {start: 2000, stop: 1900, step: 10}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must give ints start <= stop and step >= 1"):
        load_w_list(y)


def test_the_gendered_words_are_table_3_and_her_is_listed_once():
    words = load_gendered_words()
    assert len(words.pairs) == 12
    assert ("her", "him") in words.pairs and ("her", "his") in words.pairs
    female, male = words.words("female"), words.words("male")
    assert female.count("her") == 1 and len(female) == 11
    assert male == (
        "he",
        "him",
        "his",
        "himself",
        "male",
        "man",
        "men",
        "husband",
        "father",
        "boyfriend",
        "brother",
        "actor",
    )


def test_a_replaced_word_list(tmp_path):
    f = tmp_path / "words.yaml"
    f.write_text("pairs:\n  - [queen, king]\n  - [aunt, uncle]\n", encoding="utf-8")
    assert load_gendered_words(f).words("female") == ("queen", "aunt")
    f.write_text("pairs:\n  - [queen]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must be two non-empty words"):
        load_gendered_words(f)
    with pytest.raises(ValueError, match="does not exist"):
        load_gendered_words(tmp_path / "none.yaml")
    with pytest.raises(ValueError, match="'gender' parameter must be one of"):
        GenderedWords(pairs=(("she", "he"),)).words("other")


def test_probes_are_frozen():
    p = make_probes(load_w_list(["1", "2"]))[0]
    assert isinstance(p, Probe)
    with pytest.raises(AttributeError):
        p.text = "x"  # type: ignore[misc]


def test_a_w_file_with_a_byte_order_mark_reads_as_utf8_sig(tmp_path):
    # issue 43: Notepad's BOM made "\ufeff1990" a value and flipped the category to places
    f = tmp_path / "years.txt"
    f.write_bytes("\ufeff1990\n2000\n".encode())
    w = load_w_list(f)
    assert (w.category, w.values, w.numbers) == ("date", ("1990", "2000"), (1990.0, 2000.0))
    y = tmp_path / "years.yaml"
    y.write_bytes("\ufeffvalues: [1990, 2000]\n".encode())
    assert load_w_list(y).values == ("1990", "2000")
