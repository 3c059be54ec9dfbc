#!/usr/bin/env python3
# stress.py: many processes at once doing random file operations on a keyfs mount; prints what broke an invariant (tests/stress.sh runs it).
#
# usage: stress.py MOUNT SECONDS PROCS [--behind] [--check-kernel]
#
# Each process works in MOUNT/session/s0..s2 (made here, 300 keys each):
# creates, reads, rewrites, truncates, renames (in and across keyrings,
# save-by-rename as sed -i does), removes, mkdir/rmdir, xattrs, chmod,
# control files, mmap, listings read whole, in small getdents parts with
# a seek back, and dropped half way.  Invariants: no error outside the
# set a racing file system may answer, no name twice in one listing.
# --behind adds a process that changes the keyrings with keyctl behind
# keyfs's back (kernel backend); --check-kernel compares, after the run
# and a wait past the caches, each keyring's listing with the kernel's
# links (by serial: a key's inode).  Exit status 1 if anything broke.
import ctypes
import errno
import mmap
import multiprocessing as mp
import os
import queue
import random
import struct
import sys
import time

# What a key operation may answer while other processes remove, revoke,
# invalidate, expire and replace the same keys: keyfs(1) ERRORS.
ALLOWED = {
    errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR,
    errno.EISDIR, errno.ESTALE, errno.EAGAIN, errno.ENODATA, errno.EACCES,
    errno.EPERM, errno.EINVAL, errno.EXDEV, errno.EBUSY, errno.ENAMETOOLONG,
    errno.EDQUOT, errno.EOPNOTSUPP, errno.EFBIG,
    errno.ENODEV,		# a shared mmap of an open after a change
    errno.ENOKEY, errno.EKEYEXPIRED, errno.EKEYREVOKED,
}
ODD_NAMES = ["a%b", "x y", "\u00fc-\u00df", "%user:pct", "l" * 255, "l" * 256,
             "dot.", "-dash", "%25", "%2F"]
NR_GETDENTS64 = {"x86_64": 217, "aarch64": 61}.get(os.uname().machine)
KEYCTL_REVOKE, KEYCTL_SETPERM, KEYCTL_UNLINK, KEYCTL_SEARCH = 3, 5, 9, 10
KEYCTL_READ, KEYCTL_SET_TIMEOUT, KEYCTL_INVALIDATE = 11, 15, 21
SESSION = -3


def rings(mnt):
    return [os.path.join(mnt, "session", "s%d" % i) for i in range(3)]


def setup(mnt):
    """The keyrings and their keys, unless another run made them."""
    for r in rings(mnt):
        try:
            os.mkdir(r)
        except FileExistsError:
            continue
        for i in range(300):
            with open(os.path.join(r, "k%04d" % i), "w") as f:
                f.write("v%d" % i)


def listing(r, bad):
    names = [e.name for e in os.scandir(r)]
    if len(names) != len(set(names)):
        bad.append("a name twice in one listing of %s" % r)


def getdents_parts(r, rnd, bad):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(r, os.O_RDONLY | os.O_DIRECTORY)
    try:
        buf = ctypes.create_string_buffer(512)
        offs, names = [], []
        while True:
            n = libc.syscall(NR_GETDENTS64, fd, buf, 512)
            if n < 0:
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
            if n == 0:
                break
            pos = 0
            while pos < n:
                _, off, reclen, _ = struct.unpack_from("QqHB", buf.raw, pos)
                names.append(buf.raw[pos + 19:pos + reclen].split(b"\0", 1)[0])
                offs.append(off)
                pos += reclen
            if len(offs) > 50 and rnd.random() < 0.05:
                os.lseek(fd, offs[rnd.randrange(len(offs))], os.SEEK_SET)
                names = []
        if len(names) != len(set(names)):
            bad.append("a name twice in a getdents pass over %s" % r)
    finally:
        os.close(fd)


def control(mnt, r, p, rnd):
    cmd = rnd.choice(["revoke %s", "invalidate %s", "timeout %s 2",
                      "setperm %s 0x3f1f0000", "link %s session/s0",
                      "unlink %s " + os.path.relpath(r, mnt), "chown %s 0"])
    with open(os.path.join(mnt, ".keyfs", cmd.split()[0]), "w") as f:
        f.write(cmd % os.path.relpath(p, mnt) + "\n")


def one_op(mnt, rs, rnd, seed, n, bad):
    r = rnd.choice(rs)
    p = os.path.join(r, "k%04d" % rnd.randrange(400))
    op = rnd.randrange(24)
    if op >= 19 and rnd.random() < 0.5:
        p = os.path.join(r, rnd.choice(ODD_NAMES))
    if op == 0:
        with open(p, "w") as f:
            f.write("x" * rnd.randrange(1, 300))
    elif op == 1:
        with open(p, "rb") as f:
            f.read()
    elif op == 2:
        os.unlink(p)
    elif op == 3:
        listing(r, bad)
    elif op == 4:
        d = os.path.join(r, "d%02d" % rnd.randrange(10))
        (os.mkdir if rnd.random() < 0.5 else os.rmdir)(d)
    elif op == 5:
        os.rename(p, os.path.join(r, "k%04d" % rnd.randrange(400)))
    elif op == 6:
        for a in os.listxattr(p):
            os.getxattr(p, a)
    elif op == 7:
        os.stat(p)
    elif op == 8:
        it = os.scandir(r)	# a listing dropped half way
        for i, _ in enumerate(it):
            if i > rnd.randrange(1, 400):
                break
        it.close()
    elif op == 9:
        with open(p, "a") as f:
            f.write("y")
    elif op == 10:
        with open(p, "r+") as f:
            f.truncate(rnd.randrange(5))
    elif op == 11:
        control(mnt, r, p, rnd)
    elif op == 12:
        os.chmod(p, rnd.choice([0o600, 0o644, 0o400, 0o700]))
    elif op == 13:
        os.setxattr(p, "user.keyfs.perm",
                    rnd.choice([b"0x3f010000", b"0x3f3f0000", b"0x1f1f0000"]))
    elif op == 14:
        os.setxattr(p, "user.keyfs.expiry", rnd.choice([b"0", b"3", b"100"]))
    elif op == 15:
        # A map of a file another process shrinks faults (SIGBUS) past
        # the new end, on any file system: the m keys always hold 64
        # bytes, overwritten in place, and nothing else touches them.
        m_key = os.path.join(r, "m%02d" % rnd.randrange(8))
        if rnd.random() < 0.5:
            # no O_TRUNC: a truncation to 0 would shrink it for a moment
            fd = os.open(m_key, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.write(fd, os.urandom(32).hex().encode())
            finally:
                os.close(fd)
        else:
            with open(m_key, "rb") as f:
                if os.fstat(f.fileno()).st_size:
                    with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                        m[:]
    elif op == 16:
        d = os.path.join(r, "d%02d" % rnd.randrange(10))
        with open(os.path.join(d, "k%04d" % rnd.randrange(20)), "w") as f:
            f.write("n")
    elif op == 17:
        os.rename(p, os.path.join(rnd.choice(rs), "k%04d" % rnd.randrange(400)))
    elif op == 18:
        os.lstat(r)
    elif op == 19:
        tmp = os.path.join(r, ".tmp%d_%d" % (seed, rnd.randrange(3)))
        with open(tmp, "w") as f:	# save by rename, as sed -i
            f.write("sed%d" % n)
        os.rename(tmp, p)
    elif op == 20:
        with open(p, "wb") as f:	# empty: a pending entry stays
            f.write(os.urandom(rnd.choice([0, 1, 4096, 20000, 32767, 32768])))
    elif op == 21:
        getdents_parts(r, rnd, bad)
    elif op == 22:
        with open(p, "w") as f:
            f.write("v")
    else:
        with open(p, "rb") as f:
            f.read()


def worker(mnt, secs, seed, q):
    bad, n = [], 0
    try:
        rnd = random.Random(seed)
        rs = rings(mnt)
        end = time.monotonic() + secs
        while time.monotonic() < end:
            n += 1
            try:
                one_op(mnt, rs, rnd, seed, n, bad)
            except OSError as e:
                if e.errno not in ALLOWED:
                    bad.append("%s: %s" % (e.filename, os.strerror(e.errno)))
    except BaseException as e:	# a broken worker is a failure too
        bad.append("worker %d stopped: %r" % (seed, e))
    q.put((n, bad[:20]))


def keyutils():
    k = ctypes.CDLL("libkeyutils.so.1", use_errno=True)
    k.add_key.restype = ctypes.c_int32
    k.keyctl.restype = ctypes.c_long
    return k


def ring_serials(k):
    return [k.keyctl(KEYCTL_SEARCH, SESSION, b"keyring", b"s%d" % i, 0)
            for i in range(3)]


def behind(secs, seed, q):
    k = keyutils()
    rnd = random.Random(seed)
    rids = ring_serials(k)
    n = 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        r = rnd.choice(rids)
        name = b"k%04d" % rnd.randrange(400)
        n += 1
        op = rnd.randrange(6)
        if op == 0:
            k.add_key(b"user", name, b"zz", 2, r)
        else:
            s = k.keyctl(KEYCTL_SEARCH, r, b"user", name, 0)
            if s >= 0:
                if op == 1:
                    k.keyctl(KEYCTL_UNLINK, s, r)
                elif op == 2:
                    k.keyctl(KEYCTL_REVOKE, s)
                elif op == 3:
                    k.keyctl(KEYCTL_SETPERM, s, ctypes.c_uint32(0x3f0b0000))
                elif op == 4:
                    k.keyctl(KEYCTL_INVALIDATE, s)
                else:
                    k.keyctl(KEYCTL_SET_TIMEOUT, s, 1)
        time.sleep(0.001)
    q.put((n, []))


def check_kernel(mnt):
    """Each keyring's keys, as keyfs lists them, are the kernel's links."""
    k = keyutils()
    bad = []
    for r, rid in zip(rings(mnt), ring_serials(k)):
        buf = ctypes.create_string_buffer(1 << 16)
        n = k.keyctl(KEYCTL_READ, rid, buf, len(buf))
        if n < 0:
            bad.append("%s: keyctl read: %s" % (r, os.strerror(ctypes.get_errno())))
            continue
        want = set(struct.unpack("%di" % (n // 4), buf.raw[:n]))
        ents = list(os.scandir(r))
        # keyrings (d*) show an inode of their place; pending entries
        # (above 2^32) are keyfs's own
        rings_here = {e.inode() for e in ents if e.is_dir()}
        got = {e.inode() for e in ents if e.inode() < 2 ** 32} - rings_here
        want -= rings_here
        if want != got:
            bad.append("%s: only keyctl %s, only keyfs %s" %
                       (r, sorted(want - got)[:5], sorted(got - want)[:5]))
    return bad


def main():
    mnt, secs, procs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    flags = sys.argv[4:]
    setup(mnt)
    q = mp.Queue()
    ps = [mp.Process(target=worker, args=(mnt, secs, i, q)) for i in range(procs)]
    if "--behind" in flags:
        ps.append(mp.Process(target=behind, args=(secs, 1000, q)))
    for p in ps:
        p.start()
    ops, bad = 0, []
    for _ in ps:
        try:
            n, b = q.get(timeout=secs + 120)
        except queue.Empty:
            bad.append("a process never finished: exit codes %s" %
                       [p.exitcode for p in ps])
            break
        ops += n
        bad += b
    for p in ps:
        p.join(5)
    if "--check-kernel" in flags:
        time.sleep(2.5)	# past entry_timeout and attr_timeout
        bad += check_kernel(mnt)
    print("stress: %d operations, %d broken invariants" % (ops, len(bad)))
    for b in bad[:40]:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
