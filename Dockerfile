# The Cloud Run Job's image: the compiled drain with production dependencies only.
# `pulumi up` builds it on Cloud Build (infra/image.ts, infra/cloudbuild.yaml); by hand:
#   docker build --build-arg SCHEMA_FILE=path/to/your.schema.json [--build-arg ROUTES_DIR=path/to/routes] -t REGION-docker.pkg.dev/PROJECT/REPO/kafka-bigquery-drain:TAG .
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY functions ./functions
COPY scripts/bundle.mjs ./scripts/bundle.mjs
# The compiled job and its packages as one file (dist/job-bundle.cjs), started by dist/job.mjs with the V8
# code cache made here under the ENTRYPOINT's flags, which the bundle script reads from this file.
COPY Dockerfile ./
RUN npm run build && npm run bundle

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
# The target table's user columns (BQ_SCHEMA_FILE points here; the same file feeds `pulumi up`).
ARG SCHEMA_FILE=schema/target.schema.json
COPY ${SCHEMA_FILE} /app/schema/target.schema.json
# With routes (ROUTES_FILE): the routes file's folder, its schemas and rules modules inside it.
ARG ROUTES_DIR=schema
COPY ${ROUTES_DIR} /app/routes
USER node
# V8 grows its heap lazily, far past what a run holds (batches and flushes in flight): capped, a drain of
# 80,000 wide records peaks at about 250 MB of RSS instead of 440 MB, at the same CPU (npm run bench, which
# runs its variants with these same flags). Raise it with BATCH_MAX_BYTES for very large records.
# And V8 starts its old generation small, then grows it one full mark-compact at a time (five in a run of
# 20,000 wide records, each marking the ~50 MB of loaded clients again): started at 96 MB, a run makes one,
# and its CPU per record drops by about a sixth (47 -> 40 us, medians of 8 runs each) for 10-20 MB more RSS.
# And V8 compiles hot functions on threads beside the main one, which on the task's one vCPU only share it:
# compiled on the main thread instead, a run of 20,000 wide records takes 7-10% less CPU a record (32.2 vs
# 35.7 us at 20,000, 27.0 vs 29.1 at 80,000, medians of 8 and 4 paired rounds), an idle run the same.
# And its young generation in 4 MB semi-spaces (`--max-semi-space-size=4`): a million-record load peaks
# ~25 MB lower, storage-write's CPU a record unchanged (docs/capacity.md).
# And no memory reducer (`--no-memory-reducer`): V8 shrinks the heap of a process it sees allocate slowly
# (one waiting on BigQuery) by up to three full mark-compacts, each marking the loaded clients again. A task
# holds its memory whether its heap shrinks or not: in a drain of 40,000 wide records those GCs, when they
# fell in it, cost 0.1-0.3 s of CPU (10-25%) on V8's worker threads; whether they fell in it depended on
# when the last GC had been, so runs of the same records differed by as much (docs/capacity.md).
# The CLI: `run` by default (the schedule's executions); `gcloud run jobs execute ... --args=check` runs
# `check` in the cloud with the job's own account, network and secrets.
ENTRYPOINT ["node", "--max-old-space-size=192", "--max-semi-space-size=4", "--initial-old-space-size=96", "--no-concurrent-recompilation", "--no-memory-reducer", "dist/job.mjs"]
CMD ["run"]
