"""The three scoring variants against a hand computation from the logits, BERT and RoBERTa tokenizers."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.gender.probes import Probe, load_w_list, make_probes
from textcause.gender.scoring import load_masked_lm, score_column, score_probes, variant_name
from textcause.gender.words import GenderedWords, gendered_token_ids, load_gendered_words

TABLE3_FEMALE = (
    "she",
    "her",
    "herself",
    "female",
    "woman",
    "women",
    "wife",
    "mother",
    "girlfriend",
    "sister",
    "actress",
)


def hand_scores(lm, texts, female_ids, male_ids, k=5):
    """Per text, one unpadded forward pass: softmax at the mask, top-k, the gendered ids (each once)."""
    import torch

    out = []
    for text in texts:
        enc = lm.tokenizer(text, return_tensors="pt")
        (pos,) = (enc["input_ids"][0] == lm.tokenizer.mask_token_id).nonzero()[0]
        with torch.no_grad():
            logits = lm.model(**enc).logits[0, pos].double()
        p = torch.softmax(logits, dim=-1).numpy()
        top = np.argsort(-p)[:k]
        row = {}
        for g, ids in (("female", set(female_ids)), ("male", set(male_ids))):
            row[f"{g}_softmax"] = sum(p[i] for i in ids)
            row[f"{g}_top5"] = sum(p[i] for i in top if i in ids)
        for v in ("softmax", "top5"):
            total = row[f"female_{v}"] + row[f"male_{v}"]
            for g in ("female", "male"):
                row[f"{g}_{v}_renormalised"] = row[f"{g}_{v}"] / total if total > 0 else np.nan
        out.append(row)
    return out


def few_probes():
    return make_probes(load_w_list(["1801", "1901", "2001"]))  # 108 probes, both templates


def test_table_3_maps_to_one_id_per_word_in_the_minilm_tokenizer(bert):
    ids = gendered_token_ids(bert.tokenizer)
    assert ids.dropped == ()
    assert ids.female_words == TABLE3_FEMALE
    assert len(ids.female_ids) == len(set(ids.female_ids)) == 11
    assert len(ids.male_ids) == len(set(ids.male_ids)) == 12
    assert bert.tokenizer.convert_ids_to_tokens(list(ids.female_ids)) == list(TABLE3_FEMALE)


def test_three_variants_match_a_hand_computation_bert(bert):
    probes = few_probes()[::3]
    ids = gendered_token_ids(bert.tokenizer)
    scores = score_probes(probes, bert, ids, batch_size=16, progress=False)
    expected = hand_scores(bert, [p.render("[MASK]") for p in probes], ids.female_ids, ids.male_ids)
    assert scores["text"].iloc[0] == "[MASK] was a child in 1801."
    for col in expected[0]:
        np.testing.assert_allclose(
            scores[col].to_numpy(), [e[col] for e in expected], rtol=1e-5, atol=1e-9, err_msg=col
        )
    assert (scores["female_top5"] > 0).any() and (scores["male_top5"] > 0).any()  # the bumped words reach the top 5
    renorm = scores["female_softmax_renormalised"] + scores["male_softmax_renormalised"]
    np.testing.assert_allclose(renorm, 1.0)
    assert (scores["female_top5"] <= scores["female_softmax"] + 1e-12).all()


def test_her_is_counted_once(bert):
    probes = few_probes()[:6]
    ids = gendered_token_ids(bert.tokenizer)
    her = bert.tokenizer.convert_tokens_to_ids("her")
    assert ids.female_ids.count(her) == 1
    doubled = GenderedWords(pairs=load_gendered_words().pairs + (("her", "him"), ("her", "his")))
    a = score_probes(probes, bert, ids, progress=False)
    b = score_probes(probes, bert, doubled, progress=False)
    np.testing.assert_array_equal(a["female_softmax"], b["female_softmax"])
    np.testing.assert_array_equal(a["female_top5"], b["female_top5"])
    # a sum over the listed words of table 3 (her twice) would count p(her) twice
    text = probes[0].render("[MASK]")
    p_her = hand_scores(bert, [text], [her], [])[0]["female_softmax"]
    listed = [p for female, _ in load_gendered_words().pairs for p in [female]]
    assert listed.count("her") == 2
    once = hand_scores(bert, [text], ids.female_ids, [])[0]["female_softmax"]
    assert a["female_softmax"].iloc[0] == pytest.approx(once, rel=1e-9)
    assert a["female_softmax"].iloc[0] != pytest.approx(once + p_her, rel=1e-9)


def test_batching_and_padding_do_not_change_scores(bert):
    probes = few_probes()[:20] + make_probes(load_w_list(["Democratic Republic of Congo", "Mali"]))[:20]
    one = score_probes(probes, bert, batch_size=1, progress=False)
    many = score_probes(probes, bert, batch_size=13, progress=False)
    for col in ("female_softmax", "male_top5", "female_top5_renormalised"):
        np.testing.assert_allclose(one[col], many[col], rtol=1e-5, atol=1e-9)


def test_roberta_style_tokens_space_prefixed_and_a_split_word_dropped(roberta):
    with pytest.warns(UserWarning, match=r"gendered words are not scored.*\nfemale 'actress': not a single token"):
        ids = gendered_token_ids(roberta.tokenizer)
    assert [(d.word, d.gender) for d in ids.dropped] == [("actress", "female")]
    assert ids.dropped[0].reason.startswith("not a single token: it splits into ['Ġact'")
    tokens = roberta.tokenizer.convert_ids_to_tokens(list(ids.female_ids + ids.male_ids))
    assert all(t.startswith("Ġ") for t in tokens) and "Ġshe" in tokens and "Ġactor" in tokens
    assert len(ids.female_ids) == 10 and len(ids.male_ids) == 12


def test_three_variants_match_a_hand_computation_roberta(roberta):
    assert roberta.tokenizer.mask_token == "<mask>"
    probes = few_probes()[::3]
    with pytest.warns(UserWarning, match="actress"):
        scores = score_probes(probes, roberta, batch_size=8, progress=False)
    assert scores.attrs["dropped"][0][:2] == ("female", "actress")
    assert scores["text"].iloc[0] == "<mask> was a child in 1801."
    tok = roberta.tokenizer
    tokens = tok.convert_ids_to_tokens(tok("In 1801, <mask> was a kid.", add_special_tokens=False)["input_ids"])
    assert tokens[tokens.index("<mask>") - 1 : tokens.index("<mask>") + 2] == [",", "<mask>", "Ġwas"]
    ids = gendered_token_ids(roberta.tokenizer, warn=False)
    expected = hand_scores(roberta, list(scores["text"]), ids.female_ids, ids.male_ids)
    for col in expected[0]:
        np.testing.assert_allclose(
            scores[col].to_numpy(), [e[col] for e in expected], rtol=1e-5, atol=1e-9, err_msg=col
        )
    assert (scores["female_top5"] > 0).any()


def test_a_word_shared_by_both_genders_is_dropped_from_both(bert):
    words = GenderedWords(pairs=(("she", "he"), ("person", "person")))
    with pytest.warns(UserWarning, match="are the same token"):
        ids = gendered_token_ids(bert.tokenizer, words)
    assert {(d.word, d.gender) for d in ids.dropped} == {("person", "female"), ("person", "male")}
    with pytest.raises(ValueError, match="No female word of the list is a single token"):
        gendered_token_ids(bert.tokenizer, GenderedWords(pairs=(("zzqxjv", "he"),)), warn=False)


def test_a_sentence_encoder_without_a_trained_head_is_refused(tiny_encoder):
    with pytest.raises(ValueError, match=r"newly initialised weights \(cls\.predictions.*not trained"):
        load_masked_lm(tiny_encoder)
    with pytest.warns(UserWarning, match="newly initialised"):
        lm = load_masked_lm(tiny_encoder, allow_untrained=True)
    assert any(k.startswith("cls.predictions") for k in lm.newly_initialised)


def test_model_errors_are_one_sentence(tmp_path, bert):
    with pytest.raises(ValueError, match="The model path '/no/such/model' does not exist."):
        load_masked_lm("/no/such/model")
    (tmp_path / "file.bin").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        load_masked_lm(tmp_path / "file.bin")
    with pytest.raises(ValueError, match="could not be loaded as a masked LM from local files"):
        load_masked_lm("textcause-no-such-org/no-such-model")
    two = Probe(
        text="{mask} and {mask}.",
        w_category="date",
        w_list="x",
        w_value="1",
        w_index=0,
        w_number=1.0,
        template_index=0,
        tense="is",
        life_stage="a kid",
    )
    with pytest.raises(ValueError, match="holds 2 mask tokens in the model.s window of 512 tokens"):
        score_probes([two], bert, progress=False)
    with pytest.raises(ValueError, match="'batch_size' parameter of score_probes must be an int >= 1"):
        score_probes(few_probes()[:1], bert, batch_size=0)
    with pytest.raises(ValueError, match="There are no probes"):
        score_probes([], bert)


def test_variant_names():
    assert variant_name("renormalised") == "softmax_renormalised"
    assert score_column("male", "top5") == "male_top5"
    with pytest.raises(ValueError, match="'variant' parameter must be one of"):
        variant_name("top3")


def test_a_missing_key_tied_to_a_loaded_weight_is_not_newly_initialised(bert):
    from textcause.gender.scoring import newly_initialised

    tied = {"missing_keys": ["cls.predictions.decoder.weight"]}  # the word embeddings, which were loaded
    assert newly_initialised(bert.model, tied) == ()
    head = {"missing_keys": ["cls.predictions.transform.dense.weight", "not.a.parameter"]}
    assert newly_initialised(bert.model, head) == ("cls.predictions.transform.dense.weight",)
