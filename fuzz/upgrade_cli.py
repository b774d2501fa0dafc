"""The command line the fuzz/upgrade-blocks-v*.py scripts share: `[--from N --to M] FILE...`
rewrites each FILE in place with the script's `upgrade(data, from, to)`; a file it returns None
for (not a block of version `--from`) is left alone."""
import sys


def run(upgrade, default_from, default_to):
    args = sys.argv[1:]
    versions = {"--from": default_from, "--to": default_to}
    while args and args[0] in versions:
        versions[args[0]] = int(args[1])
        args = args[2:]
    for path in args:
        with open(path, "rb") as f:
            new = upgrade(f.read(), versions["--from"], versions["--to"])
        if new is not None:
            with open(path, "wb") as f:
                f.write(new)
            print(f"{path}: layout {versions['--to']}")
