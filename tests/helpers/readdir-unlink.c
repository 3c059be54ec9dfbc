/* readdir-unlink.c: read part of a listing, remove an entry, read the rest; the rest must be sane. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Check one getdents64 batch: every name but . and .. other than gone must
 * stat to the inode the listing gave.  Returns the problems found. */
static int check_batch(int dfd, const char *buf, long n, const char *gone,
		       int *count)
{
	int bad = 0;

	for (long off = 0; off < n;) {
		const struct linux_dirent64 *d = (const void *)(buf + off);
		struct stat st;

		off += d->d_reclen;
		(*count)++;
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (gone && strcmp(d->d_name, gone) == 0) {
			fprintf(stderr, "removed entry %s still listed\n", d->d_name);
			bad++;
			continue;
		}
		if (d->d_name[0] == '\0' || d->d_ino == 0) {
			fprintf(stderr, "entry with no name or inode\n");
			bad++;
		} else if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			fprintf(stderr, "%s: listed but not there\n", d->d_name);
			bad++;
		} else if ((unsigned long long)st.st_ino != d->d_ino) {
			fprintf(stderr, "%s: listed as inode %llu, is %llu\n",
				d->d_name, d->d_ino, (unsigned long long)st.st_ino);
			bad++;
		}
	}
	return bad;
}

/* usage: readdir-unlink DIR NAME: reads the first 1 KiB of DIR's listing,
 * unlinks DIR/NAME, waits for the kernel to forget it, reads the rest. */
int main(int argc, char *argv[])
{
	static char buf[1024], rest[65536];
	struct timespec pause = { 0, 300 * 1000 * 1000 };
	int dfd, bad = 0, count = 0;
	long n;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DIR NAME\n", argv[0]);
		return 2;
	}
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		perror(argv[1]);
		return 2;
	}
	n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
	if (n <= 0) {
		perror("getdents64");
		return 2;
	}
	bad += check_batch(dfd, buf, n, NULL, &count);
	if (unlinkat(dfd, argv[2], 0) < 0) {
		perror(argv[2]);
		return 2;
	}
	nanosleep(&pause, NULL);
	while ((n = syscall(SYS_getdents64, dfd, rest, sizeof(rest))) > 0)
		bad += check_batch(dfd, rest, n, argv[2], &count);
	if (n < 0) {
		perror("getdents64");
		return 2;
	}
	close(dfd);
	printf("%d entries, %d bad\n", count, bad);
	return bad ? 1 : 0;
}
