@echo off
rem strata on Windows: this will run setup.sh inside WSL2.
rem Placeholder: the full WSL2 check and hand-off come with the set-up issue.
echo strata runs on Windows through WSL2 (Windows Subsystem for Linux).
echo This launcher does not run set-up yet. For now:
echo   1. Install WSL2 from an administrator prompt:  wsl --install
echo   2. Open the WSL (Ubuntu) terminal, go to this folder and run:  ./setup.sh
pause
