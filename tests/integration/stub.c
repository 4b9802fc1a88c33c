/*
 * stub.c - c4-test-stub, a stand-in daemon for the tests of the harness.
 *
 * Started as the harness starts a daemon (-d -f CONFIG), it reads one line
 * "MODE STATUS" from CONFIG and ends with exit status STATUS by itself:
 *   exit N   exits at once, before any READY=1;
 *   ready N  sends READY=1 to $NOTIFY_SOCKET, then exits.
 * SIGTERM is blocked before READY=1, so a stop that races the exit sees
 * the same status whichever comes first.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Sends READY=1 to the harness's notify socket; 0 or -1. */
static int
stub_notify_ready(void)
{
	static const char msg[] = "READY=1\nC4_LISTEN=127.0.0.1:1";
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	int fd, rc;

	if (path == NULL || strlen(path) >= sizeof(sun.sun_path))
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	rc = sendto(fd, msg, sizeof(msg) - 1, 0, (struct sockaddr *)&sun,
		    sizeof(sun)) == (ssize_t)(sizeof(msg) - 1)
		     ? 0
		     : -1;
	close(fd);
	return rc;
}

int
main(int argc, char **argv)
{
	char mode[16];
	int status;
	sigset_t term;
	FILE *fp;

	if (argc != 4 || strcmp(argv[2], "-f") != 0) {
		fprintf(stderr, "usage: c4-test-stub -d -f CONFIG\n");
		return 2;
	}
	fp = fopen(argv[3], "r");
	if (fp == NULL || fscanf(fp, "%15s %d", mode, &status) != 2) {
		fprintf(stderr, "%s: expected \"MODE STATUS\"\n", argv[3]);
		return 2;
	}
	fclose(fp);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	if (strcmp(mode, "ready") == 0 && stub_notify_ready() < 0) {
		fprintf(stderr, "no notify socket\n");
		return 2;
	}
	fprintf(stderr, "stub: %s, exit status %d\n", mode, status);
	return status;
}
