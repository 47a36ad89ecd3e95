"""tidelog.meter: the hot-path histograms and counters the metrics collector reads."""

from __future__ import annotations

import threading

from tidelog.meter import (
    BYTES_IN,
    BYTES_OUT,
    RECORDS_IN,
    RECORDS_OUT,
    REQUEST_PHASES,
    Histogram,
    PartitionTraffic,
    RequestTimes,
    SyncHistogram,
)


def test_histogram_counts_each_value_in_the_first_bucket_at_or_above_it():
    h = Histogram((0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 1.0, 3.0, 7.0):
        h.observe(v)
    assert h.counts == [2, 2, 2]  # <= 0.1, <= 1.0, +Inf
    assert h.count == 6
    assert abs(h.sum - 11.65) < 1e-9
    assert h.cumulative() == [("0.1", 2), ("1.0", 4), ("+Inf", 6)]


def test_sync_histogram_loses_no_observation_across_threads():
    h = SyncHistogram((0.5,))

    def work():
        for _ in range(20_000):
            h.observe(0.25)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    buckets, total = h.snapshot()
    assert buckets == [("0.5", 80_000), ("+Inf", 80_000)]
    assert total == 20_000.0


def test_partition_traffic_keeps_forgotten_partitions_in_the_totals():
    t = PartitionTraffic()
    t.appended("a", 0, 100, 3)
    t.appended("a", 0, 50, 2)
    t.appended("b", 1, 10, 1)
    t.sent("a", 0, 120, 4)
    assert t.by_partition[("a", 0)] == [150, 5, 120, 4]
    assert t.totals() == [160, 6, 120, 4]
    t.forget("a", 0)
    t.forget("nope", 9)
    assert ("a", 0) not in t.by_partition
    assert t.totals() == [160, 6, 120, 4]  # a counter never goes down
    t.appended("a", 0, 1, 1)  # a re-created topic starts again from zero
    assert t.by_partition[("a", 0)][BYTES_IN] == 1 and t.by_partition[("a", 0)][RECORDS_IN] == 1
    assert t.totals()[BYTES_IN] == 161
    assert t.totals()[BYTES_OUT] == 120 and t.totals()[RECORDS_OUT] == 4


MS = 1_000_000  # nanoseconds


def test_request_times_splits_a_request_into_kafkas_phases():
    times = RequestTimes()
    # api 0: received at 10 ms, started 11, handler returned 13, response ready 23; released 29 (it
    # waited for an earlier response of its connection), handed to the transport at 31
    pending = {5: [0, 10 * MS, 11 * MS, 13 * MS, 23 * MS, 0, 0, 9]}
    times.released(pending, 5, 6, 29 * MS, 31 * MS)
    assert pending == {}
    assert times.by_api == {}  # buffered until folded
    times.fold()
    hs = dict(zip(REQUEST_PHASES, times.histograms(0)))
    expected = {"total": 0.021, "request_queue": 0.001, "local": 0.002, "remote": 0.010,
                "response_queue": 0.006, "response_send": 0.002}
    for phase, value in expected.items():
        assert hs[phase].count == 1, phase
        assert abs(hs[phase].sum - value) < 1e-9, (phase, hs[phase].sum)
    assert hs["total"].cumulative()[8] == ("0.025", 1) and hs["total"].cumulative()[7] == ("0.01", 0)


def test_a_response_released_at_once_has_no_response_queue_time():
    times = RequestTimes()
    pending = {0: [1, 0, 0, MS, 2 * MS, 0, 0, 9]}
    times.released(pending, 0, 1, 2 * MS, 3 * MS)  # released by itself: its own ready time
    times.fold()
    hs = dict(zip(REQUEST_PHASES, times.histograms(1)))
    assert hs["response_queue"].sum == 0 and hs["response_queue"].counts[0] == 1
    assert abs(hs["response_send"].sum - 0.001) < 1e-12


def test_request_times_skips_requests_without_timestamps_and_keeps_later_ones():
    times = RequestTimes()
    pending = {0: [3, 0, 0, 0, 1, 0, 0, 9], 1: [3, 0, 0, 0, 0, 0, 0, 9], 2: [3, 0, 0, 0, 1, 0, 0, 9]}
    times.released(pending, 0, 2, 500 * MS, 1000 * MS)  # 1 was released unfinished (closed): dropped
    assert list(pending) == [2]
    times.fold()
    total = times.histograms(3)[0]
    assert total.count == 1 and total.sum == 1.0
    assert total.cumulative()[-5:] == [("1.0", 1), ("2.5", 1), ("5.0", 1), ("10.0", 1), ("+Inf", 1)]
    assert total.cumulative()[-6] == ("0.5", 0)


def test_request_times_fold_by_themselves_every_so_many_requests():
    times = RequestTimes()
    for seq in range(RequestTimes.FOLD_EVERY - 1):
        times.released({seq: [0, 0, 0, 0, 1, 0, 0, 9]}, seq, seq + 1, 1, 1)
    assert times.by_api == {}
    times.released({0: [0, 0, 0, 0, 1, 0, 0, 9]}, 0, 1, 1, 1)
    assert times.histograms(0)[0].count == RequestTimes.FOLD_EVERY


def test_request_times_add_one_request_whose_response_left():
    times = RequestTimes()
    times.add([2, 0, MS, 2 * MS, 4 * MS, 0, 0, 9], 4 * MS, 5 * MS)
    times.fold()
    hs = dict(zip(REQUEST_PHASES, times.histograms(2)))
    assert abs(hs["total"].sum - 0.005) < 1e-12 and abs(hs["remote"].sum - 0.002) < 1e-12
    assert hs["response_queue"].sum == 0


def test_request_times_count_each_api_per_request_version():
    times = RequestTimes()
    times.add([0, 0, 0, 0, 1, 0, 0, 13], 1, 1)
    times.released({0: [0, 0, 0, 0, 1, 0, 0, 13], 1: [0, 0, 0, 0, 1, 0, 0, 9], 2: [1, 0, 0, 0, 1, 0, 0, 18]},
                   0, 3, 1, 1)
    times.fold()
    assert times.versions(0) == {13: 2, 9: 1}
    assert times.versions(1) == {18: 1}
    assert times.histograms(0)[0].count == 3  # the phase histograms stay per API
