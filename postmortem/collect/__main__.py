import argparse
import sys

from postmortem.collect import configure, main

sys.exit(main(configure(argparse.ArgumentParser(prog="postmortem collect")).parse_args()))
