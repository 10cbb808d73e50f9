# The Stalwart worker image used by docker-compose.yml.
FROM python:3.11.11-slim-bookworm

WORKDIR /app
COPY pyproject.toml README.md ./
COPY contracts ./contracts
COPY workflows ./workflows
COPY activities ./activities
COPY workers ./workers
COPY client ./client
COPY agents ./agents
RUN pip install --no-cache-dir .

CMD ["stalwart", "worker"]
