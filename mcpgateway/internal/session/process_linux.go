package session

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the child in its own process group, so that closing the
// server signals everything it started, and asks the kernel to kill it if
// the service dies first.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}
