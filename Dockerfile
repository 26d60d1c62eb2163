# Mnemo: one image for web nodes and task workers (compose.yaml runs both from it).
# Settings come from the environment (.env.example); with DATABASE_URL the embedded PostgreSQL
# is never started, so the image needs no database server of its own.
#
# Two stages: `export` installs torch (the `export` extra) only to write the offline
# embedder's ONNX graphs; the final image holds the runtime set and those graphs, no torch.
# Started on a CPU other than the build machine's, the graphs are measured again there.

FROM python:3.11-slim-bookworm AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false
WORKDIR /app
RUN pip install --no-cache-dir --upgrade "pip>=25.1"

FROM base AS export
# torch first, pinned (2.13.0). Pass TORCH_PIP_ARGS="--index-url <PyTorch's CPU wheel index>"
# to get the CPU build; PyPI's default build carries GBs of CUDA libraries.
ARG TORCH_PIP_ARGS=""
COPY . .
RUN pip install --no-cache-dir torch==2.13.0 ${TORCH_PIP_ARGS} \
 && pip install --no-cache-dir -c requirements.txt ".[export]" \
 && python -m memory_site.providers.onnx_export /models/all-MiniLM-L6-v2-onnx

FROM base
COPY . .
# The runtime set alone, pinned by the lock: no torch, no test tools.
RUN pip install --no-cache-dir -c requirements.txt . \
 && useradd --create-home --uid 1000 mnemo && mkdir -p /data && chown mnemo /data
COPY --from=export --chown=mnemo /models /models
ENV MNEMO_DATA_DIR=/data \
    MNEMO_MODELS_DIR=/models
USER mnemo

EXPOSE 8000
# Web node; compose.yaml overrides the command for the worker and the one-off migrate.
# Static files go to MNEMO_DATA_DIR/static (whitenoise serves them), collected at start.
CMD ["sh", "-c", "python manage.py collectstatic --noinput -v 0 && python manage.py serve --no-worker --host 0.0.0.0 --port 8000 --web-workers ${WEB_WORKERS:-2}"]
