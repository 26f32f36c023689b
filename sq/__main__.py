try:
    from sq.cli import main
except KeyboardInterrupt:  # Ctrl-C while sq is still loading: the same exit as later
    raise SystemExit(130) from None

raise SystemExit(main())
