"""Domain records for the domain-record benchmark (run.sh).

gen.py N PARTS DIR: N records in PARTS USV files (the specification's
terminated form) DIR/records-K.usv, the same rows as DIR/records.tsv for
PostgreSQL, and DIR/queries.csv (every 997th domain) in wirebench's format.
Deterministic: the same N gives the same files.
"""
import sys
syl = ["al","be","cor","dan","el","fi","gar","hol","in","jas","ka","lo","mar","nor","ol","pen","qua","ros","sun","tor","ul","ver","wes","xan","yor","zen"]
tlds = ["com","com","com","org","net","de","io","fr","nl","info"]
N, PARTS, DIR = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(DIR + "/queries.csv", "w") as qf, open(DIR + "/records.tsv", "w", encoding="utf-8") as tf:
    qf.write("qid,rank,domain,dataset_id\n")
    for part in range(PARTS):
        with open("%s/records-%d.usv" % (DIR, part), "w", encoding="utf-8") as f:
            f.write("domain\u241fcompany_name\u241fscraper_version\u241fupdated_at\u241f\u241e\n")
            for i in range(part * N // PARTS, (part + 1) * N // PARTS):
                d = "%s%s%d.%s" % (syl[i % 26], syl[(i // 26) % 26], i, tlds[i % len(tlds)])
                company, version, at = "Company %d" % i, i % 7, "2024-%02d-%02dT%02d:00:00Z" % (1 + i % 12, 1 + i % 28, i % 24)
                f.write("%s\u241f%s\u241f%d\u241f%s\u241f\u241e\n" % (d, company, version, at))
                tf.write("%s\t%s\t%d\t%s\n" % (d, company, version, at))
                if i % 997 == 0:
                    qf.write("%d,%d,%s,0\n" % (i // 997, i // 997, d))
