import sys

try:
    from sq.cli import main
except KeyboardInterrupt:  # Ctrl-C while sq is still loading: no traceback
    print("interrupted", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
