"""tools/source-commit.sh names the commit of symm's own source tree, never that of a repository enclosing it.

usage: test_source_commit.py SOURCE_COMMIT_SH
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 else None


def git(cwd, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t', GIT_COMMITTER_NAME='t',
               GIT_COMMITTER_EMAIL='t@t')
    return subprocess.run(['git', '-C', str(cwd), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


class SourceCommit(unittest.TestCase):
    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix='symm-source-commit-'))

    def tearDown(self):
        shutil.rmtree(self.scratch)

    def sources_at(self, where: Path) -> Path:
        """A copy of the sources' layout that the script needs: tools/source-commit.sh, include/."""
        (where / 'tools').mkdir(parents=True)
        (where / 'include').mkdir()
        (where / 'include' / 'a.hpp').write_text('// a\n')
        shutil.copy(SCRIPT, where / 'tools' / 'source-commit.sh')
        return where

    def commit_of(self, sources: Path, *args) -> str:
        return subprocess.run([str(sources / 'tools' / 'source-commit.sh'), *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    def test_a_work_tree_of_its_own_gives_its_commit(self):
        sources = self.sources_at(self.scratch / 'symm')
        git(sources, 'init', '-q')
        git(sources, 'add', '-A')
        git(sources, 'commit', '-qm', 'x')
        head = git(sources, 'rev-parse', 'HEAD')
        self.assertEqual(self.commit_of(sources), head)
        (sources / 'include' / 'a.hpp').write_text('// changed\n')
        self.assertEqual(self.commit_of(sources), f'{head} (with uncommitted changes)')

    def test_sources_copied_into_another_repository_are_unknown(self):
        outer = self.scratch / 'other-project'
        outer.mkdir()
        git(outer, 'init', '-q')
        (outer / 'README').write_text('another project\n')
        git(outer, 'add', '-A')
        git(outer, 'commit', '-qm', 'unrelated')
        sources = self.sources_at(outer / 'third_party' / 'symm')
        self.assertEqual(self.commit_of(sources), 'unknown')
        self.assertEqual(self.commit_of(sources, str(sources)), 'unknown')

    def test_no_git_at_all_is_unknown(self):
        sources = self.sources_at(self.scratch / 'symm')
        self.assertEqual(self.commit_of(sources), 'unknown')


if __name__ == '__main__':
    unittest.main(verbosity=2)
