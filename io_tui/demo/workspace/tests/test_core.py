import unittest

from textstats import most_common, reading_time_minutes, word_count


class WordCountTest(unittest.TestCase):
    def test_simple_sentence(self):
        self.assertEqual(word_count("the quick brown fox"), 4)

    def test_blank_text_has_no_words(self):
        self.assertEqual(word_count("   "), 0)

    def test_newlines_and_repeated_spaces(self):
        self.assertEqual(word_count("one  two\nthree\n"), 3)


class MostCommonTest(unittest.TestCase):
    def test_counts_case_insensitively(self):
        self.assertEqual(most_common("a A b", 1), [("a", 2)])


class ReadingTimeTest(unittest.TestCase):
    def test_at_least_one_minute(self):
        self.assertEqual(reading_time_minutes("short"), 1)


if __name__ == "__main__":
    unittest.main()
