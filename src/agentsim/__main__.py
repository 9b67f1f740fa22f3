from agentsim.cli.main import main

main()
