"""The shared length-bucketed training order (``textcause.data.samplers``)."""

from __future__ import annotations

import numpy as np

from textcause.data.samplers import LengthBucketSampler


def test_length_buckets_are_seeded_permutations_of_similar_lengths():
    lengths = np.random.default_rng(0).integers(5, 70, size=1000)
    first, again = (list(LengthBucketSampler(lengths, 10, 20, seed=1)) for _ in range(2))
    assert first == again and sorted(first) == list(range(1000))
    batches = np.array(first).reshape(-1, 10)
    padded = lengths[batches].max(axis=1).sum() * 10
    assert padded / lengths.sum() < 1.1  # a random order pads about 1.8 times the tokens
    plain = list(LengthBucketSampler(lengths, 10, 0, seed=1))
    assert sorted(plain) == list(range(1000)) and plain != first
    sampler = LengthBucketSampler(lengths, 10, 20, seed=1)
    assert list(sampler) == first and list(sampler) != first  # the next epoch draws a new order
    assert len(sampler) == 1000


def test_one_bucket_holds_the_batches_of_the_sorted_run():
    # one run of 6 sorted by length: positions 1, 3, 4, 2, 0, 5 -> batches {1,3}, {4,2}, {0,5}, shuffled
    order = list(LengthBucketSampler([5, 1, 4, 2, 3, 6], batch_size=2, buckets=3, seed=7))
    assert sorted(map(sorted, np.reshape(order, (3, 2)).tolist())) == [[0, 5], [1, 3], [2, 4]]


def test_without_buckets_the_order_is_the_seeded_permutation_of_epoch_e():
    sampler = LengthBucketSampler(np.arange(9), batch_size=4, buckets=0, seed=5)
    epochs = [list(sampler) for _ in range(3)]
    assert epochs == [np.random.default_rng(5 + e).permutation(9).tolist() for e in range(3)]


def test_the_order_is_the_one_both_data_modules_served_before_they_shared_it():
    # pinned from gender's LengthBuckets and counterfactual's BucketSampler (identical copies)
    sampler = LengthBucketSampler([5, 1, 4, 2, 3, 6, 7], batch_size=2, buckets=2, seed=3)
    assert [list(sampler), list(sampler)] == [[5, 6, 1, 2, 3, 4, 0], [1, 2, 0, 5, 6, 3, 4]]
