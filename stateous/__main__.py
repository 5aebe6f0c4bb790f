"""`python -m stateous` behaves exactly as the `stateous` command."""

from stateous.cli.main import main

if __name__ == "__main__":
    main()
