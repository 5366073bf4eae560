"""spark-submit entry point: run connectors from properties files as one Spark application.

    spark-submit --master spark://127.0.0.1:7077 jobs/connect_standalone.py \
        [--available-now] worker.properties connector.properties [more.properties ...]

The master, deploy mode and resources come from spark-submit; the worker's ``spark.*`` keys add to them.
"""

import sys

from connect_spark.cli import main

if __name__ == "__main__":
    sys.exit(main(["standalone", *sys.argv[1:]]))
