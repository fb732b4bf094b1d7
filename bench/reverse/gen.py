#!/usr/bin/env python3
"""The reverse-lookup corpus (issue 17 §3): N registered domains and three
URL lists in DIR: full.txt (every domain, 1-3 URLs each), sixty.txt (about
60% of them, one URL each) and thirty.txt (about 30%). Deterministic.

    gen.py N DIR
"""
import os, random, sys

n, out = int(sys.argv[1]), sys.argv[2]
r = random.Random(17)
syl = ["al", "be", "cor", "dan", "el", "fi", "gar", "hol", "in", "jas", "ka", "lo", "mar", "nor", "ol", "pen", "qua", "ros",
       "sun", "tor", "ul", "ver", "wes", "xan", "yor", "zen", "bright", "green", "blue", "city", "news", "shop", "tech", "data", "web", "net"]
tlds = ["com", "com", "com", "com", "org", "net", "co.uk", "de", "io", "fr", "com.au", "info", "jp", "nl", "edu", "ru", "it", "ca", "es", "pl"]
words = ["alpha", "river", "garden", "market", "review", "guide", "report", "story", "item", "photo"]


def b36(i):
    digits, s = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while True:
        s, i = digits[i % 36] + s, i // 36
        if i == 0:
            return s


domains = ["".join(r.choice(syl) for _ in range(1 + r.randrange(3))) + b36(i) + "." + r.choice(tlds) for i in range(n)]
with open(os.path.join(out, "full.txt"), "w") as f, open(os.path.join(out, "sixty.txt"), "w") as g, open(os.path.join(out, "thirty.txt"), "w") as h:
    for i, d in enumerate(domains):
        for k in range(1 + i % 3):
            f.write(f"https://www.{d}/{r.choice(words)}/{k}.html\n")
        if r.random() < 0.6:
            g.write(f"https://{d}/{r.choice(words)}\n")
        if r.random() < 0.3:
            h.write(f"http://{d}/x/{r.choice(words)}?id={i}\n")
