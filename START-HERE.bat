@echo off
rem START-HERE.bat: the Windows double-click entry for strata.
rem strata runs inside WSL2 (Windows Subsystem for Linux). This file checks for
rem WSL2, explains how to install it when it is missing (it installs nothing by
rem itself without asking), then runs setup.sh inside WSL with the same
rem arguments, e.g.  START-HERE.bat --model stories260K
setlocal EnableExtensions
title strata set-up

where wsl.exe >nul 2>nul
if errorlevel 1 goto :no_wsl

rem A distribution must be installed: "wsl -l -q" lists none otherwise.
wsl.exe -l -q >nul 2>nul
if errorlevel 1 goto :no_distro
for /f "usebackq delims=" %%d in (`wsl.exe -l -q 2^>nul`) do goto :have_distro
goto :no_distro

:have_distro
echo strata: running setup.sh inside WSL in "%~dp0"
echo         (it installs build dependencies with apt-get and may ask for your Linux password)
wsl.exe --cd "%~dp0" -- bash ./setup.sh %*
if errorlevel 1 goto :failed
echo.
echo strata: set-up finished. Open the WSL terminal in this folder to use bin/strata.
pause
exit /b 0

:no_wsl
echo strata needs WSL2 (Windows Subsystem for Linux), which is not installed.
echo.
echo To install it, open PowerShell or Command Prompt as Administrator and run:
echo     wsl --install
echo then restart Windows, finish the Ubuntu first-run (user name and password),
echo and double-click START-HERE.bat again.
echo.
pause
exit /b 1

:no_distro
echo WSL is present but no Linux distribution is installed.
echo.
set /p answer="Install Ubuntu now with 'wsl --install -d Ubuntu'? It downloads about 1 GB. [y/N] "
if /i not "%answer%"=="y" (
    echo Nothing was installed. Run  wsl --install -d Ubuntu  yourself, then START-HERE.bat again.
    pause
    exit /b 1
)
wsl.exe --install -d Ubuntu
echo.
echo When Ubuntu has finished its first start (user name and password), double-click
echo START-HERE.bat again.
pause
exit /b 1

:failed
echo.
echo strata: setup.sh failed; the messages above say what failed and what to do.
echo Fix that, then double-click START-HERE.bat again: finished steps are skipped.
pause
exit /b 1
