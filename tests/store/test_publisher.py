"""The reply path's broker connections (recap.store.publisher), on the test run's
own Redis database: kept open and handed out again, never after they failed, and
never more than the pool holds."""

from __future__ import annotations

import pytest
from celery import Celery

from recap.store.publisher import POOL_SIZE, Publisher


@pytest.fixture
def app() -> Celery:
    from recap.worker.celery_app import app

    return app


def test_a_connection_is_kept_open_and_handed_out_again(app: Celery) -> None:
    publisher = Publisher()
    with publisher.connection(app) as first:
        first.ensure_connection(max_retries=0)
    with publisher.connection(app) as again:
        assert again is first and again.connected


def test_a_connection_whose_publish_failed_is_not_handed_out_again(app: Celery) -> None:
    publisher = Publisher()
    with pytest.raises(RuntimeError), publisher.connection(app) as failed:
        failed.ensure_connection(max_retries=0)
        raise RuntimeError("the publish failed")
    assert not failed.connected
    with publisher.connection(app) as next_one:
        assert next_one is not failed


def test_past_the_pool_a_publish_gets_a_connection_of_its_own(app: Celery) -> None:
    publisher = Publisher()
    held = [publisher.connection(app) for _ in range(POOL_SIZE)]
    pooled = [h.__enter__() for h in held]
    try:
        with publisher.connection(app) as own:
            own.ensure_connection(max_retries=0)
            assert all(own is not p for p in pooled)
        assert not own.connected  # closed at once: it was never the pool's
    finally:
        for h in held:
            h.__exit__(None, None, None)


def test_another_broker_url_gets_a_pool_of_its_own(app: Celery,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    publisher = Publisher()
    first = publisher.pool(app)
    assert publisher.pool(app) is first
    # Celery reads the broker from the environment first, at each use. The pool is
    # built lazily: nothing connects to the other database.
    other = str(app.conf.broker_url).rsplit("/", 1)[0] + "/0"
    monkeypatch.setenv("CELERY_BROKER_URL", other)
    assert app.conf.broker_url == other
    assert publisher.pool(app) is not first
