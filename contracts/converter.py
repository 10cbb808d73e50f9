"""The data converter every client and worker of Stalwart must share.

Pydantic models travel as plain JSON, so a run can also be started from the
Temporal CLI or any other SDK with a JSON input.
"""

from temporalio.contrib.pydantic import pydantic_data_converter

DATA_CONVERTER = pydantic_data_converter
