# One image for every Recap process: migrate, worker, beat and flower
# (docker-compose.yml picks the command). Code is read-only to the runtime user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TIKTOKEN_CACHE_DIR=/opt/recap/tiktoken

WORKDIR /app

COPY pyproject.toml README.md ./
COPY models ./models
COPY worker ./worker
RUN pip install .

# The token counter's BPE file is fetched at build time, so workers start without
# reaching the internet (worker start-up refuses to run without it).
RUN python -c "import tiktoken; tiktoken.get_encoding('cl100k_base')"

# `alembic upgrade head` runs from /app (alembic.ini reads DATABASE_URL via settings).
COPY alembic.ini ./
COPY migrations ./migrations

RUN useradd --system --uid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin recap
USER recap

CMD ["celery", "-A", "worker", "worker", "--loglevel", "INFO"]
