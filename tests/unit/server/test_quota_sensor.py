"""The quota sensor's rate and throttle time, against Kafka's arithmetic worked by hand, and the
long-run rate of a client that waits out every throttle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.server.quota_sensor import QuotaSensor


def test_a_new_sensor_measures_over_samples_minus_one_windows():
    s = QuotaSensor(11, 1000)
    s.record(1000, 0)
    # elapsed 0 ms, padded to 10 full windows: 1000 bytes / 10 s
    assert s.window_size_ms(0) == 10_000
    assert s.rate(0) == pytest.approx(100.0)


def test_throttle_time_is_the_time_back_to_the_bound():
    s = QuotaSensor(11, 1000)
    # rate 100/s against a bound of 50/s over a 10 s window: (100 - 50) / 50 * 10_000
    assert s.record_and_throttle_ms(1000, 50, 0) == 10_000
    assert QuotaSensor(11, 1000).record_and_throttle_ms(1000, 100, 0) == 0  # at the bound is within it


def test_request_quota_throttle_is_capped():
    s = QuotaSensor(11, 1000)
    assert s.record_and_throttle_ms(1000, 50, 0, max_ms=1000) == 1000


def test_samples_roll_over_and_old_ones_expire():
    s = QuotaSensor(2, 1000)
    s.record(100, 0)
    s.record(100, 1000)   # a second sample
    s.record(100, 2000)   # a third (the overlapping slot)
    # the first sample's last event is samples * window old: reset; 200 over 1000..2000
    assert s.rate(2000) == pytest.approx(200.0)
    s.record(100, 3000)   # reuses the first slot; the 1000 one expires
    assert s.rate(3000) == pytest.approx(200.0)
    # nothing recorded for samples * window: everything is reset
    assert s.rate(3000 + 2000) == 0.0


def test_window_is_at_least_one_millisecond():
    s = QuotaSensor(1, 1000)
    s.record(5, 0)
    assert s.window_size_ms(0) == 1
    assert s.rate(0) == pytest.approx(5000.0)


def test_negative_record_takes_a_value_back():
    s = QuotaSensor()
    s.record(1000, 0)
    s.record(-1000, 0)
    assert s.rate(0) == 0.0


@settings(max_examples=60, deadline=None)
@given(bound=st.integers(1_000, 10_000_000), size_fraction=st.floats(0.01, 2.0))
def test_a_client_that_waits_out_its_throttles_holds_the_bound(bound, size_fraction):
    """KIP-219's contract: a client that sends, and waits the throttle time it is given, averages the
    quota within 10% once past its first measuring window (a new client may first send up to
    ``(quota.window.num - 1) * window`` seconds' worth at once, as in Kafka). Kafka's sampled rate is
    coarse (whole 1 s samples expire at once), so a client sending as fast as it is let through lands
    between about 0.89 and 1.115 times the quota in this model, requests of up to 2 s' worth included."""
    s = QuotaSensor(11, 1000)
    size = max(1, int(bound * size_fraction))
    now, steady_from, steady_sent = 0, 20_000, 0
    while now < 80_000:
        throttle = s.record_and_throttle_ms(size, bound, now)
        if now >= steady_from:
            steady_sent += size
        now += max(throttle, 1)
    rate = steady_sent / ((now - steady_from) / 1000)
    assert bound * 0.88 <= rate <= bound * 1.12
