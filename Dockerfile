# One image for every Recap process: migrate, worker, beat and flower
# (docker-compose.yml picks the command), plus `recap demo` and `recap bench`.
# Code is read-only to the runtime user.
FROM python:3.11-slim

# Recap installs as the one package `recap` (site-packages); PYTHONPATH=/app is
# for bench/ and tests/, which `recap bench` runs from /app.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    TIKTOKEN_CACHE_DIR=/opt/recap/tiktoken \
    XDG_DATA_HOME=/var/lib

WORKDIR /app

COPY pyproject.toml README.md ./
COPY recap ./recap
RUN pip install .
# Extras to add, e.g. `docker build --build-arg RECAP_EXTRAS=bench .` for all of
# `recap bench` (plots, memory sampling, the LangMem/LangChain peers).
ARG RECAP_EXTRAS=""
RUN if [ -n "$RECAP_EXTRAS" ]; then pip install ".[$RECAP_EXTRAS]"; fi

# The token counter's BPE file is fetched at build time, so workers start without
# reaching the internet (worker start-up refuses to run without it).
RUN python -c "import tiktoken; tiktoken.get_encoding('cl100k_base')"

# The migrate service runs `recap db upgrade` (the package carries the migrations);
# alembic.ini keeps `alembic upgrade head` working from /app as well.
COPY alembic.ini ./

# `recap bench` (python -m bench): the benchmarks, and the Claude stand-in and
# helpers they share with the tests. Plots go to docs/bench, writable by recap.
COPY bench ./bench
COPY tests ./tests

# /var/lib/recap: beat's schedule file (RECAP_BEAT_DIR), writable by recap only;
# also Recap's data directory ($XDG_DATA_HOME/recap: the CLI's error log).
RUN useradd --system --uid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin recap \
    && install -d -o recap -m 0700 /var/lib/recap
RUN install -d -o recap -m 0755 /app/docs/bench
USER recap

CMD ["recap", "worker", "--loglevel", "INFO"]
