from profkit.cli import main

main()
