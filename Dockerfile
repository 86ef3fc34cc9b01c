# One image for every Recap process: migrate, worker, beat and flower
# (docker-compose.yml picks the command), plus `recap demo` and `recap bench`.
# It holds the product only: the package `recap` installed in site-packages (the
# benchmarks `recap bench` runs are part of it); no tests, no benchmark lab.
# Code is read-only to the runtime user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TIKTOKEN_CACHE_DIR=/opt/recap/tiktoken \
    XDG_DATA_HOME=/var/lib

WORKDIR /app

COPY pyproject.toml README.md ./
COPY recap ./recap
RUN pip install .
# Extras to add, e.g. `docker build --build-arg RECAP_EXTRAS=bench .` for all of
# `recap bench` (the LangMem/LangChain peers, the HTTP API's benchmark, plots,
# memory sampling).
ARG RECAP_EXTRAS=""
RUN if [ -n "$RECAP_EXTRAS" ]; then pip install ".[$RECAP_EXTRAS]"; fi

# The token counter's BPE file is fetched at build time, so workers start without
# reaching the internet (worker start-up refuses to run without it).
RUN python -c "import tiktoken; tiktoken.get_encoding('cl100k_base')"

# The migrate service runs `recap db upgrade` (the package carries the migrations);
# alembic.ini keeps `alembic upgrade head` working from /app as well.
COPY alembic.ini ./

# /var/lib/recap: beat's schedule file (RECAP_BEAT_DIR), writable by recap only;
# also Recap's data directory ($XDG_DATA_HOME/recap: the CLI's error log).
RUN useradd --system --uid 10001 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin recap \
    && install -d -o recap -m 0700 /var/lib/recap
USER recap

CMD ["recap", "worker", "--loglevel", "INFO"]
