# The Stalwart worker image used by docker-compose.yml (the worker and the codec server).
# tests/test_compose_stack.py builds this image's Python environment with the same commands, in a venv.
FROM python:3.11.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY stalwart ./stalwart
COPY contracts ./contracts
COPY workflows ./workflows
COPY activities ./activities
COPY workers ./workers
COPY client ./client
COPY agents ./agents
# s3: external payload storage in MinIO or any S3-compatible store (STALWART_STORAGE=s3://...).
RUN pip install --no-cache-dir ".[s3]"

# Not root: the worker needs no privileges.
RUN useradd --create-home --uid 10001 stalwart && chown stalwart /app
USER stalwart

CMD ["stalwart", "worker"]
