"""The scripted conversation `recap demo` feeds: an SRE debugging a production rollout.

Pure and deterministic: :func:`conversation` yields ``(role, content)`` pairs.
The first 80 messages are a scripted incident (names, dates, amounts, file
paths, pasted logs and configs, so messages are as long as real ones); past
that, day-by-day follow-ups with generated metrics continue it indefinitely.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

SCRIPTED = 80
_START = datetime(2024, 3, 14, 9, 41, 7)
_PATHS = ("/v1/invoices", "/v1/invoices/INV-2024-03-0187", "/v1/customers/cus_8812/charges",
          "/v1/webhooks/stripe", "/healthz", "/v1/refunds")


def _rng(seed: int) -> random.Random:
    return random.Random(f"recap-demo-{seed}")


def nginx_log(seed: int, lines: int = 28) -> str:
    r = _rng(seed)
    t = _START + timedelta(minutes=seed)
    out = []
    for _ in range(lines):
        t += timedelta(milliseconds=r.randint(40, 900))
        status = r.choice((502, 502, 504, 200, 502))
        upstream = "60.001" if status != 200 else f"{r.uniform(0.02, 0.4):.3f}"
        out.append(f'{t.isoformat(timespec="milliseconds")}Z 10.0.{r.randint(1, 9)}.'
                   f'{r.randint(2, 250)} "{r.choice(("GET", "POST"))} {r.choice(_PATHS)} '
                   f'HTTP/1.1" {status} {r.randint(150, 4200)} upstream_response_time='
                   f'{upstream} request_id={r.getrandbits(64):016x} '
                   f'upstream_addr=10.0.{r.randint(10, 40)}.{r.randint(2, 250)}:8080')
    return "```\n" + "\n".join(out) + "\n```"


def kubectl_pods(seed: int, oom: bool = False) -> str:
    r = _rng(seed)
    rows = ["NAME                           READY   STATUS             RESTARTS        AGE"]
    for _ in range(12):
        status = r.choice(("Running", "Running", "CrashLoopBackOff" if oom else "Running"))
        restarts = r.randint(3, 14) if status != "Running" else r.randint(0, 2)
        rows.append(f"billing-api-7d9f{r.getrandbits(16):04x}-{r.getrandbits(20):05x}   "
                    f"{'0/1' if status != 'Running' else '1/1'}     {status:<18} "
                    f"{restarts} ({r.randint(1, 50)}m ago)    {r.randint(20, 90)}m")
    if oom:
        rows.append("\nLast State:     Terminated\n  Reason:       OOMKilled\n  Exit Code:    137\n"
                    "  Limits:       memory: 512Mi  cpu: 500m\n  Requests:     memory: 256Mi")
    return "```\n$ kubectl -n billing get pods -l app=billing-api\n" + "\n".join(rows) + "\n```"


def traceback_text(seed: int) -> str:
    r = _rng(seed)
    return ("```\nTraceback (most recent call last):\n"
            '  File "/app/src/billing/api/invoices.py", line 148, in create_invoice\n'
            "    async with db.session() as session:\n"
            '  File "/app/src/billing/db/pool.py", line 61, in session\n'
            "    conn = await self._engine.connect()\n"
            '  File "/usr/local/lib/python3.12/site-packages/sqlalchemy/pool/impl.py", '
            "line 177, in _do_get\n    raise exc.TimeoutError(\n"
            "sqlalchemy.exc.TimeoutError: QueuePool limit of size 20 overflow 10 reached, "
            f"connection timed out, timeout 30.00 (Background on this error at: "
            f"https://sqlalche.me/e/20/3o7r)\nrequest_id={r.getrandbits(64):016x} "
            f"pod=billing-api-7d9f{r.getrandbits(16):04x} tenant=acme-gmbh\n```")


def pg_activity(seed: int) -> str:
    r = _rng(seed)
    rows = [" pid  | state               | wait_event    | duration | query",
            "------+---------------------+---------------+----------+-----------------------"]
    for _ in range(18):
        state = r.choice(("active", "idle in transaction", "idle in transaction", "active"))
        query = r.choice(("SELECT * FROM invoices WHERE customer_id = $1 FOR UPDATE",
                          "CREATE INDEX ix_invoices_customer_due ON invoices (customer_id, due",
                          "UPDATE invoices SET status = 'paid' WHERE id = $1",
                          "INSERT INTO ledger_entries (invoice_id, amount_cents) VALUES ($1"))
        rows.append(f" {r.randint(20000, 39999)} | {state:<19} | "
                    f"{r.choice(('Lock:relation', 'ClientRead', 'Lock:tuple', '')):<13} | "
                    f"{r.randint(0, 9):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999):03d} | "
                    f"{query}")
    return "```\n" + "\n".join(rows) + "\n```"


def metrics(seed: int, day: int = 0) -> str:
    r = _rng(seed)
    rows = ["hour (UTC) | req/s | p50 ms | p99 ms | 5xx  | pgbouncer waiting | pod memory"]
    for h in range(24):
        rows.append(f"{h:02d}:00      | {r.randint(180, 640):>5} | {r.randint(18, 45):>6} | "
                    f"{r.randint(120, 900 if day < 2 else 300):>6} | {r.uniform(0, 2.5):.2f}% | "
                    f"{r.randint(0, 40 if day < 2 else 4):>17} | {r.randint(300, 700)}Mi")
    return "```\n" + "\n".join(rows) + "\n```"


def app_log(seed: int, lines: int = 16, start: datetime | None = None) -> str:
    r = _rng(seed)
    t = start or _START + timedelta(minutes=30 + 7 * seed)
    events = (("charge_due_invoices.start", "INFO"), ("stripe.charge.created", "INFO"),
              ("ledger_entry.inserted", "INFO"), ("pdf.render.done", "INFO"),
              ("db.pool.wait", "WARNING"), ("stripe.refund.created", "INFO"))
    out = []
    for _ in range(lines):
        t += timedelta(seconds=r.randint(1, 40))
        event, level = r.choice(events)
        out.append(json.dumps({
            "ts": t.isoformat(timespec="milliseconds") + "Z", "level": level, "event": event,
            "invoice": f"INV-2024-03-{r.randint(150, 260):04d}",
            "customer": f"cus_{r.randint(8000, 8999)}",
            "amount_eur": f"{r.randint(40, 9000)}.{r.randint(0, 99):02d}",
            "pod": f"billing-{r.choice(('api', 'beat', 'worker'))}-{r.getrandbits(16):04x}",
            "trace_id": f"{r.getrandbits(128):032x}"}))
    return "```json\n" + "\n".join(out) + "\n```"


PGBOUNCER_INI = """```ini
# deploy/pgbouncer/pgbouncer.ini
[databases]
billing = host=billing-prod.cluster-c8x2.eu-west-1.rds.amazonaws.com port=5432 dbname=billing

[pgbouncer]
pool_mode = transaction
max_client_conn = 200
default_pool_size = 20
reserve_pool_size = 5
reserve_pool_timeout = 3
server_idle_timeout = 600
query_wait_timeout = 120
```"""

VALUES_YAML = """```yaml
# deploy/helm/billing-api/values-prod.yaml
replicaCount: 6
image:
  repository: 412977301245.dkr.ecr.eu-west-1.amazonaws.com/billing-api
  tag: v2.14.0
resources:
  requests: {cpu: 250m, memory: 256Mi}
  limits: {cpu: 500m, memory: 512Mi}
env:
  DB_POOL_SIZE: "20"
  DB_MAX_OVERFLOW: "10"
  WEB_CONCURRENCY: "4"
  INVOICE_PDF_RENDERER: weasyprint
ingress:
  annotations:
    nginx.ingress.kubernetes.io/proxy-read-timeout: "60"
    nginx.ingress.kubernetes.io/proxy-body-size: 8m
```"""

MIGRATION = """```python
# migrations/versions/0042_add_invoice_index.py
def upgrade() -> None:
    op.create_index("ix_invoices_customer_due", "invoices", ["customer_id", "due_date"])
    op.add_column("invoices", sa.Column("dunning_level", sa.SmallInteger(),
                                        nullable=False, server_default="0"))

def downgrade() -> None:
    op.drop_column("invoices", "dunning_level")
    op.drop_index("ix_invoices_customer_due", table_name="invoices")
```"""

MIGRATION_FIX = """```python
# migrations/versions/0042_add_invoice_index.py (fixed)
def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index("ix_invoices_customer_due", "invoices",
                        ["customer_id", "due_date"], postgresql_concurrently=True)
    op.execute("SET lock_timeout = '3s'")
    op.add_column("invoices", sa.Column("dunning_level", sa.SmallInteger(), nullable=True))
```"""

CRON = """```python
# src/billing/tasks/schedule.py
beat_schedule = {
    "charge-due-invoices": {
        "task": "billing.tasks.charge_due_invoices",
        "schedule": crontab(hour=6, minute=0),   # meant 06:00 Europe/Berlin
    },
}
timezone = "UTC"          # <- set in celeryconfig.py since v2.14.0
enable_utc = True
```"""

WORKFLOW = """```yaml
# .github/workflows/deploy.yml (excerpt)
  deploy-prod:
    needs: [migrate-prod]
    environment: production
    steps:
      - run: helm upgrade --install billing-api deploy/helm/billing-api \\
               -f deploy/helm/billing-api/values-prod.yaml --set image.tag=${{ github.ref_name }} \\
               --atomic --timeout 10m
      - run: ./scripts/smoke.sh https://billing.larkspur.io
```"""

Artifact = Callable[[int], str] | str | None

# (user prose, user artifact, assistant prose, assistant artifact)
_BEATS: list[tuple[str, Artifact, str, Artifact]] = [
    ("Hi, I'm Maya Okafor, SRE at Larkspur Analytics. We rolled out billing-api v2.14.0 to the "
     "EKS cluster prod-eu-west-1 at 09:30 UTC today (Thursday 14 March 2024) and since 09:41 "
     "about a third of requests through the nginx ingress return 502. Staging was clean. "
     "Here's a slice of the ingress log:", nginx_log,
     "Thanks Maya. The pattern matters: every 502 has upstream_response_time=60.001, which is "
     "exactly the ingress proxy-read-timeout, so nginx gave up waiting on the pod rather than "
     "the pod refusing connections. That points to requests hanging inside billing-api, not to "
     "crashing pods. Can you show pod status and any exceptions from the app logs around "
     "09:41?", None),
    ("Pods look mostly alive but some restart. Output:", lambda s: kubectl_pods(s, oom=True),
     "Two separate problems then. The CrashLoopBackOff pods were OOMKilled at the 512Mi limit "
     "(exit 137), and the Running ones are hanging. v2.14.0 switched the invoice PDF renderer "
     "to weasyprint, which is known to take 150-250Mi per render; with WEB_CONCURRENCY=4 a pod "
     "can exceed 512Mi under load. Please paste the Helm values you deployed.", None),
    ("Here are the prod values:", VALUES_YAML,
     "Confirmed: limits.memory 512Mi with 4 workers, and DB_POOL_SIZE=20 plus DB_MAX_OVERFLOW=10 "
     "per worker. That is up to 30 connections x 4 workers x 6 replicas = 720 client "
     "connections towards PgBouncer. What are PgBouncer's limits?", None),
    ("PgBouncer config from deploy/pgbouncer/pgbouncer.ini:", PGBOUNCER_INI,
     "That's the hang: max_client_conn = 200 but the pods can open 720, and "
     "default_pool_size = 20 server connections per database/user pair. Clients beyond "
     "max_client_conn are refused, and the rest queue for up to query_wait_timeout=120s, "
     "far longer than nginx's 60s. Do you see QueuePool timeouts in the app?", None),
    ("Yes, lots of these in the app logs:", traceback_text,
     "QueuePool limit of size 20 overflow 10 reached: each worker exhausted its own pool "
     "because connections are held while waiting on PgBouncer. Short term: set "
     "DB_POOL_SIZE=5 and DB_MAX_OVERFLOW=0 so 4 x 6 x 5 = 120 connections stay under 200. "
     "But I'd also check why queries are slow; pool exhaustion is often a symptom.", None),
    ("Good call, pg_stat_activity on the primary shows this:", pg_activity,
     "Several sessions wait on Lock:relation for the invoices table, and there is a "
     "CREATE INDEX ix_invoices_customer_due running. A plain CREATE INDEX takes a SHARE lock "
     "that blocks every INSERT/UPDATE on invoices (1.8M rows here) until it finishes. Was "
     "migration 0042 run by the deploy pipeline this morning?", None),
    ("It was. This is the migration:", MIGRATION,
     "That's the root cause of the slowness: create_index without postgresql_concurrently, "
     "plus add_column with a server_default in the same transaction. Here's a safer version; "
     "CONCURRENTLY cannot run inside a transaction, hence the autocommit block:", MIGRATION_FIX),
    ("The index build is at 71% per pg_stat_progress_create_index. Should I cancel it with "
     "pg_cancel_backend or let it finish? Our CFO Daniel Reyes wants the invoice run for "
     "ACME GmbH (invoice INV-2024-03-0187, EUR 48,200.00) to go out before 12:00 UTC. "
     "Current activity:", pg_activity,
     "Let it finish: cancelling rolls back all the work and the next attempt holds the lock "
     "again. At 71% after ~40 minutes it should be done in about 15. Meanwhile scale the "
     "ingress timeout up only if you must; I'd rather return fast errors. Set "
     "proxy-read-timeout to 30 and tell Daniel the ACME invoice will go at ~11:15 UTC.", None),
    ("Index finished at 10:58. 502s dropped but not to zero. Fresh log slice:", nginx_log,
     "Much better, the remaining 502s are on /v1/invoices/INV-... PDF endpoints only, which "
     "fits the OOM story: the pod dies mid-render and nginx loses the upstream. Let's raise "
     "limits.memory to 1Gi and WEB_CONCURRENCY to 2 for now, then measure.", None),
    ("Applied with helm upgrade, revision 58. Pods now:", kubectl_pods,
     "All 1/1 Running with zero restarts in the last minutes. Keep watching for 30 minutes. "
     "While we wait: who else should know? I'd post in #billing-incidents that the ACME "
     "invoice is unblocked and that PDFs may be slow until we tune weasyprint.", None),
    ("Posted. Now a weirder one: finance says 37 customers were charged twice this morning, "
     "at 06:00 UTC and again at 07:00 UTC. Total double charges EUR 61,318.40. Here is the "
     "beat schedule and the worker log around 06:00:",
     lambda s: CRON + "\n\n" + app_log(s, start=datetime(2024, 3, 14, 5, 59, 50)),
     "The comment says 06:00 Europe/Berlin, which is 05:00 UTC in March (CET, UTC+1). v2.14.0 "
     "changed celeryconfig to timezone='UTC', so the old beat pod (still on v2.13.2 during the "
     "rollout, firing at 05:00 UTC as Berlin 06:00?) and the new one each ran the job. Were "
     "two beat pods alive during the rollout?", None),
    ("Yes! The old beat pod billing-beat-5c8d only terminated at 07:04 UTC because of a 2h "
     "terminationGracePeriodSeconds. So both fired.", None,
     "Then the fix is twofold: make charge_due_invoices idempotent (a unique constraint on "
     "(invoice_id, charge_date) in ledger_entries so a second run is a no-op) and run beat as "
     "a singleton with strategy Recreate. For the 37 customers, refund the second charge via "
     "Stripe with idempotency keys like refund-dup-2024-03-14-<invoice_id>.", None),
    ("Finance wants the refund list reviewed first. The largest is ACME GmbH with EUR 1,240.50 "
     "charged twice on INV-2024-03-0191. Can you draft the SQL to list the duplicates?", None,
     "Here's a read-only query to review before any refund:",
     "```sql\nSELECT invoice_id, customer_id, count(*) AS charges, sum(amount_cents)/100.0 AS "
     "total_eur,\n       min(created_at) AS first_at, max(created_at) AS second_at\nFROM "
     "ledger_entries\nWHERE created_at >= '2024-03-14 04:00' AND created_at < "
     "'2024-03-14 08:00'\n  AND kind = 'charge'\nGROUP BY invoice_id, customer_id\nHAVING "
     "count(*) > 1\nORDER BY total_eur DESC;\n```"),
    ("Query returns 37 rows, total EUR 61,318.40, matches finance. I'll send the CSV to "
     "Priya Nair in finance. Metrics for the day so far:", metrics,
     "p99 is still spiky in the 09:00 bucket but that's the incident window. The pgbouncer "
     "waiting column going to single digits after 12:00 is the pool change working. Next step "
     "I'd suggest is the postmortem timeline while it's fresh.", None),
    ("Let's do the timeline. Deploy started 09:30, 502s from 09:41, index done 10:58, memory "
     "fix 11:20, refunds pending. Anything I'm missing?", None,
     "Add: 05:00 and 06:00 UTC the two beat runs (root cause of double charges), 07:04 old "
     "beat pod terminated, 09:36 migration 0042 started (from the deploy log), 11:15 ACME "
     "invoice INV-2024-03-0187 sent. Detection time matters too: who noticed first, alert or "
     "customer?", None),
    ("A customer noticed first: Jonas Berg from Nordlicht AB emailed support at 09:52. Our "
     "alert on 5xx rate only fires above 5% for 10 minutes. Here's our deploy workflow:",
     WORKFLOW,
     "Two process gaps: migrate-prod runs before deploy-prod with no lock_timeout, so a "
     "blocking migration takes production down before the app even rolls; and the smoke test "
     "only hits the homepage. I'd add a migration linter (squawk) in CI and set lock_timeout "
     "in env.py for every migration.", None),
    ("Squawk sounds good. Another log slice from the afternoon to check we're healthy:",
     nginx_log,
     "Mostly 200s with low upstream times; the remaining 502s are all on PDF renders again. "
     "Let's look at weasyprint memory: rendering the ACME invoice (420 line items) probably "
     "allocates a lot. Could we move PDF rendering to a separate worker deployment?", None),
    ("We have a Celery queue 'pdf' already for emails. Moving renders there means the API "
     "returns 202 and the client polls GET /v1/invoices/{id}/pdf. Is that OK for the "
     "frontend team (lead: Tomás Silva)?", None,
     "It's a contract change, so version it: keep the synchronous endpoint for small invoices "
     "(under 50 line items) and return 202 with a Location header above that. Tomás's team "
     "gets two weeks to switch. Put the deadline in the postmortem: Friday 29 March 2024.",
     None),
    ("Pods again after the pdf-worker split, I deployed it to staging only:", kubectl_pods,
     "Staging looks stable. Before prod, load-test with the ACME invoice shape: 420 line "
     "items, 20 concurrent renders. If pdf-worker stays under 1.5Gi with concurrency 2 we're "
     "good. I'd also add a memory alert at 85% of the limit.", None),
    ("Load test done: peak 1.31Gi on pdf-worker, API pods flat at 310Mi. Metrics:", metrics,
     "Those numbers support the split. API p99 under 300ms outside the incident window. "
     "Schedule the prod rollout for Monday 18 March 10:00 UTC, not a Friday, and keep the "
     "refund job separate from this deploy.", None),
    ("Refunds: Priya approved the list. I'm running the refund script "
     "scripts/refund_duplicates.py with --dry-run first. Output:",
     "```\n$ python scripts/refund_duplicates.py --date 2024-03-14 --dry-run\nwould refund 37 "
     "charges, EUR 61,318.40 total\n  INV-2024-03-0191 ACME GmbH          EUR  1,240.50  key="
     "refund-dup-2024-03-14-0191\n  INV-2024-03-0204 Nordlicht AB       EUR    980.00  key="
     "refund-dup-2024-03-14-0204\n  INV-2024-03-0211 Kestrel Foods Ltd  EUR  4,112.75  key="
     "refund-dup-2024-03-14-0211\n  ... 34 more\nno changes made (dry run)\n```",
     "The keys are deterministic per invoice, so re-running after a crash can't double-refund; "
     "Stripe dedupes on the idempotency key for 24 hours. Run it for real, then reconcile "
     "against Stripe's balance transactions tomorrow.", None),
    ("Ran it. 36 succeeded, 1 failed: INV-2024-03-0233 (Brightwater Ltd, EUR 2,305.10) got "
     "'charge_already_refunded'. Support had refunded it manually at 10:12. Log:", app_log,
     "That's fine, Stripe protected you. Record it in the refund log with the manual refund "
     "id so finance's reconciliation matches: 36 automated + 1 manual = 37, EUR 61,318.40. "
     "Also email each customer; support has a template for duplicate charges.", None),
    ("Now the idempotency fix for charge_due_invoices. Draft "
     "migration for the unique constraint? Today's ledger writes for context:", app_log,
     "Build the index concurrently first, then attach it as a constraint, so no long lock:",
     "```python\n# migrations/versions/0043_ledger_charge_unique.py\ndef upgrade() -> None:\n"
     "    with op.get_context().autocommit_block():\n        op.create_index(\n"
     "            \"uq_ledger_entries_invoice_charge_date\", \"ledger_entries\",\n"
     "            [\"invoice_id\", \"charge_date\"], unique=True,\n"
     "            postgresql_concurrently=True,\n"
     "            postgresql_where=sa.text(\"kind = 'charge'\"))\n\n"
     "def downgrade() -> None:\n    with op.get_context().autocommit_block():\n"
     "        op.drop_index(\"uq_ledger_entries_invoice_charge_date\",\n"
     "                      table_name=\"ledger_entries\", postgresql_concurrently=True)\n```"),
    ("And in the task, catch the IntegrityError?", None,
     "Better: INSERT ... ON CONFLICT DO NOTHING RETURNING id, and only call Stripe when a row "
     "came back. Write the ledger row first with status 'pending', then charge with "
     "idempotency key charge-<invoice_id>-<charge_date>, then mark it 'succeeded'. A crash "
     "between steps is then recoverable by a sweeper.", None),
    ("Makes sense. Beat singleton: I set strategy Recreate in deploy/helm/billing-beat/"
     "values-prod.yaml. Also lowered terminationGracePeriodSeconds from 7200 to 60.", None,
     "Good. With Recreate there's a short window with no beat at all during deploys, which "
     "is what you want for a scheduler. Add a startup check that refuses to run if another "
     "beat holds the Redis lock billing:beat:leader.", None),
    ("Alerting: 5xx > 5% for 10m was too slow. What thresholds would you use?", None,
     "Use burn-rate alerts on a 99.5% monthly SLO: page when the 1h burn rate exceeds 14.4 "
     "and the 5m one confirms; ticket at 6x over 6h. On today's traffic that would have paged "
     "at about 09:45, seven minutes before Jonas emailed.", None),
    ("Metrics for Friday 15 March, first full day after the fixes:", lambda s: metrics(s, 2),
     "Clean: p99 under 300ms all day, pgbouncer waiting near zero, 5xx well under the SLO. "
     "Memory on API pods stays around 300-700Mi with the 1Gi limit, so there's headroom. "
     "I'd keep the 1Gi limit until the pdf-worker split ships Monday.", None),
    ("Postmortem draft is at docs/postmortems/2024-03-14-billing-502.md. Review meeting is "
     "Wednesday 20 March 15:00 CET with Daniel, Priya, Tomás and me. Anything to add to "
     "action items?", None,
     "Action items with owners and dates: (1) squawk in CI, Maya, 22 Mar; (2) lock_timeout in "
     "migrations/env.py, Maya, 22 Mar; (3) pdf-worker split, Maya, 18 Mar; (4) 202 contract "
     "for large invoices, Tomás, 29 Mar; (5) ledger idempotency, Maya, 25 Mar; (6) burn-rate "
     "alerts, Maya, 22 Mar; (7) refund reconciliation, Priya, 15 Mar.", None),
    ("Monday 18 March: pdf-worker went to prod at 10:00 UTC. Pods:", kubectl_pods,
     "All healthy. Now you can bring the API memory limit back to 512Mi and WEB_CONCURRENCY "
     "back to 4, since renders no longer happen in the API pods. Do it as a separate deploy "
     "so any regression is attributable.", None),
    ("Done in revision 61. One more log slice, looks clean to me:", nginx_log,
     "Agreed, the 502s left are on /healthz during pod startup, which is a readiness probe "
     "timing issue (initialDelaySeconds=5 while the app needs ~8s). Set initialDelaySeconds "
     "to 15 and add a startupProbe.", None),
    ("Startup probe added, app log from the last rollout below. Last thing: can we reproduce "
     "the original pool exhaustion in staging to prove DB_POOL_SIZE=5 holds under 2x peak?",
     app_log,
     "Yes: run k6 at 1,300 req/s (2x today's 640 peak) against staging with the 0042-style "
     "lock simulated by a long transaction holding SHARE on invoices. Expect fast 503s from "
     "the app (pool timeout 5s) instead of 60s hangs. Record the result in the postmortem.",
     None),
    ("k6 result: p99 4.8s during the simulated lock, 503 rate 12%, zero 502s, recovered "
     "within 20s of releasing the lock. App traceback during the lock:", traceback_text,
     "That's the desired failure mode: bounded waits and fast errors, no ingress timeouts. "
     "You could lower pool_timeout to 2s for even faster shedding. I think the incident is "
     "fully covered now.", None),
    ("Thanks. Metrics for the week so far:", lambda s: metrics(s, 4),
     "Steady state looks healthy across the board. Close the incident in the tracker "
     "(INC-2291), link the postmortem, and move open action items to the SRE board with the "
     "dates we agreed.", None),
    ("Will do. Can you summarize what we changed in config so I can paste it in the PR "
     "description for billing-api #1874?", None,
     "Config changes: DB_POOL_SIZE 20 -> 5, DB_MAX_OVERFLOW 10 -> 0, ingress proxy-read-timeout "
     "60 -> 30, API memory limit 512Mi -> 1Gi -> 512Mi (after the pdf-worker split), "
     "WEB_CONCURRENCY 4 -> 2 -> 4, beat strategy Recreate, terminationGracePeriodSeconds "
     "7200 -> 60, readiness initialDelaySeconds 5 -> 15 plus a startupProbe.", None),
    ("Perfect. Final check of pgbouncer.ini, do we still need changes there?", PGBOUNCER_INI,
     "With at most 120 client connections from the API plus ~20 from workers, "
     "max_client_conn = 200 is fine. I'd lower query_wait_timeout from 120 to 10 so a queue "
     "at PgBouncer surfaces as a fast error instead of another hang.", None),
    ("Changed query_wait_timeout to 10. Thanks for all the help this week!", None,
     "You're welcome, Maya. Good luck with the review on Wednesday 20 March; the timeline and "
     "action items are solid.", None),
    ("One more question before the review: Daniel asks what the incident cost. Refunds were "
     "EUR 61,318.40 (all returned), plus support time. Anything else to count? Refund job "
     "log for reference:", app_log,
     "Count Stripe fees on the duplicate charges (not returned on refunds: about 1.5% + "
     "EUR 0.25 each, roughly EUR 929 here), engineering hours (you, two on-call, ~14h), and "
     "the delayed ACME invoice (EUR 48,200.00, sent 75 minutes late, no penalty).", None),
    ("Great, adding that. Staging log from the final regression run:", nginx_log,
     "Mostly clean. The few non-200s are the simulated failures from your k6 script. "
     "Nothing left that worries me.", None),
    ("Last: should the rollout checklist say 'no Friday deploys'?", None,
     "Say 'no deploys after 15:00 on Fridays or before public holidays' and require a named "
     "rollback owner; a blanket ban just moves risk to Mondays. Add 'migration linted and "
     "lock_timeout set' as a checklist item too.", None),
    ("Added. Closing INC-2291 now.", None,
     "Sounds good. Keep the docs/postmortems/2024-03-14-billing-502.md link in the ticket.",
     None),
]


def _render(text: str, artifact: Artifact, seed: int) -> str:
    if artifact is None:
        return text
    body = artifact(seed) if callable(artifact) else artifact
    return f"{text}\n\n{body}"


def _follow_up(day: int) -> tuple[str, str]:
    date = (datetime(2024, 3, 22) + timedelta(days=day)).strftime("%A %d %B %Y")
    user = (f"Daily check-in for {date}: billing-api metrics below, INC-2291 follow-ups "
            f"{min(7, 3 + day)}/7 done.\n\n{metrics(1000 + day, 5)}")
    assistant = (f"{date} looks healthy: no pgbouncer queueing and 5xx under the SLO. "
                 f"Remaining action items stay on the SRE board; nothing new to do today.")
    return user, assistant


def conversation(n: int) -> Iterator[tuple[str, str]]:
    """The first ``n`` messages as ``(role, content)``, alternating user/assistant."""
    if n < 0:
        raise ValueError(f"message count must be >= 0, got {n}")
    produced = 0
    for i, (user, u_art, assistant, a_art) in enumerate(_BEATS):
        for role, text, art, seed in (("user", user, u_art, 2 * i),
                                      ("assistant", assistant, a_art, 2 * i + 1)):
            if produced == n:
                return
            yield role, _render(text, art, seed)
            produced += 1
    day = 0
    while produced < n:
        user, assistant = _follow_up(day)
        for role, text in (("user", user), ("assistant", assistant)):
            if produced == n:
                return
            yield role, text
            produced += 1
        day += 1
