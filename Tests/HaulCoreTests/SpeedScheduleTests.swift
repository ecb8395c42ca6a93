import HaulCore
import Testing

/// `--limit-schedule`'s grammar and what it says at each moment of the week.
@Suite(.timeLimit(.minutes(1))) struct SpeedScheduleTests {
    typealias Moment = SpeedSchedule.Moment

    @Test func theFirstRuleThatCoversAMomentGivesTheLimitElseTheFallback() throws {
        let schedule = try SpeedSchedule(parsing: " Mon-Fri 09:00-18:00 1M ;sat,SUNDAY 00:00-24:00 0; ")
        #expect(schedule.description == "Mon-Fri 09:00-18:00 1M; sat,SUNDAY 00:00-24:00 0")
        let fallback = ByteRate(bytesPerSecond: 5000)
        #expect(
            schedule.rate(at: Moment(weekday: .monday, hour: 9, minute: 0), otherwise: fallback)
                == ByteRate(bytesPerSecond: 1 << 20))
        #expect(
            schedule.rate(at: Moment(weekday: .friday, hour: 17, minute: 59, second: 59), otherwise: fallback)
                == ByteRate(bytesPerSecond: 1 << 20))
        #expect(
            schedule.rate(at: Moment(weekday: .friday, hour: 18, minute: 0), otherwise: fallback) == fallback,
            "the end is not covered")
        #expect(schedule.rate(at: Moment(weekday: .monday, hour: 8, minute: 59), otherwise: fallback) == fallback)
        #expect(
            schedule.rate(at: Moment(weekday: .saturday, hour: 12, minute: 0), otherwise: fallback) == nil,
            "0: no limit")
        #expect(schedule.rule(at: Moment(weekday: .sunday, hour: 23, minute: 59))?.text == "sat,SUNDAY 00:00-24:00 0")

        let overlapping = try SpeedSchedule(parsing: "Mon 10:00-11:00 100K; * 00:00-24:00 2M")
        #expect(
            overlapping.rate(at: Moment(weekday: .monday, hour: 10, minute: 30), otherwise: nil)
                == ByteRate(bytesPerSecond: 100 << 10))
        #expect(
            overlapping.rate(at: Moment(weekday: .monday, hour: 11, minute: 0), otherwise: nil)
                == ByteRate(bytesPerSecond: 2 << 20))
    }

    @Test func aSpanEndingAtOrBeforeItsStartRunsPastMidnightAndARangeOfDaysMayWrap() throws {
        let schedule = try SpeedSchedule(parsing: "Fri-Mon 22:00-06:00 500K")
        let limit = ByteRate(bytesPerSecond: 500 << 10)
        #expect(schedule.rate(at: Moment(weekday: .saturday, hour: 5, minute: 59), otherwise: nil) == limit)
        #expect(
            schedule.rate(at: Moment(weekday: .tuesday, hour: 5, minute: 0), otherwise: nil) == limit,
            "Monday's night ends on Tuesday")
        #expect(schedule.rate(at: Moment(weekday: .tuesday, hour: 6, minute: 0), otherwise: nil) == nil)
        #expect(schedule.rate(at: Moment(weekday: .thursday, hour: 23, minute: 0), otherwise: nil) == nil)
        #expect(
            schedule.rate(at: Moment(weekday: .monday, hour: 3, minute: 0), otherwise: nil) == limit, "Sunday's night")
    }

    @Test func theNextBoundaryIsTheNearestStartOrEndOfAnyRule() throws {
        let schedule = try SpeedSchedule(parsing: "Mon-Fri 09:00-18:00 1M")
        #expect(schedule.secondsToNextBoundary(from: Moment(weekday: .monday, hour: 8, minute: 59)) == 60)
        #expect(
            schedule.secondsToNextBoundary(from: Moment(weekday: .monday, hour: 9, minute: 0)) == 9 * 3600,
            "strictly after")
        #expect(
            schedule.secondsToNextBoundary(from: Moment(weekday: .friday, hour: 18, minute: 0)) == (2 * 24 + 15) * 3600,
            "Monday 09:00")
        let always = try SpeedSchedule(parsing: "* 00:00-24:00 1M")
        #expect(always.boundaries.isEmpty, "one rule all week: nothing ever changes")
        #expect(
            always.secondsToNextBoundary(from: Moment(weekday: .sunday, hour: 23, minute: 59, second: 30))
                == Moment.week)
        #expect(Moment(secondOfWeek: -1) == Moment(weekday: .sunday, hour: 23, minute: 59, second: 59))
    }

    /// Where one rule's spans meet, nothing changes: a limit set by hand on Saturday is not reset
    /// at Sunday 00:00.
    @Test func aBoundaryIsWhereTheRuleInForceChanges() throws {
        let weekend = try SpeedSchedule(parsing: "Sun 20:00-22:00 1M; Sat,Sun 00:00-24:00 0")
        let expected = [
            Moment(weekday: .monday, hour: 0, minute: 0), Moment(weekday: .saturday, hour: 0, minute: 0),
            Moment(weekday: .sunday, hour: 20, minute: 0), Moment(weekday: .sunday, hour: 22, minute: 0),
        ]
        #expect(weekend.boundaries == expected.map(\.secondOfWeek), "not Sunday 00:00")
        let saturday = Moment(weekday: .saturday, hour: 12, minute: 0)
        #expect(!weekend.passesBoundary(from: saturday, to: Moment(weekday: .sunday, hour: 12, minute: 0)))
        #expect(weekend.passesBoundary(from: saturday, to: Moment(weekday: .sunday, hour: 20, minute: 0)))
        #expect(!weekend.passesBoundary(from: saturday, to: saturday))
        #expect(
            weekend.passesBoundary(from: saturday, to: Moment(weekday: .saturday, hour: 11, minute: 0)),
            "set back: round the week")
    }

    @Test(arguments: [
        "", " ; ", "Mon-Fri 09:00-18:00", "Mon-Fri 09:00-18:00 1M extra", "Funday 09:00-18:00 1M", "Mo 09:00-18:00 1M",
        "Mon- 09:00-18:00 1M", "Mon,,Tue 09:00-18:00 1M", "Mon 9:00-18:00 1M", "Mon 09:00-25:00 1M",
        "Mon 24:00-01:00 1M",
        "Mon 09:60-18:00 1M", "Mon 09:00-09:00 1M", "Mon 09:00 1M", "Mon 09:00-18:00 fast", "Mon 09:00-18:00 -1M",
        "Mon 09:00-18:00 1M; Tue 10:00-11:00",
    ])
    func aMalformedScheduleIsAOneLineUsageErrorNamingTheRule(text: String) {
        #expect {
            _ = try SpeedSchedule(parsing: text)
        } throws: { error in
            guard let error = error as? HaulError else { return false }
            return error.code == .usage && error.message.hasPrefix("--limit-schedule: ")
                && !error.message.contains("\n")
        }
    }

    @Test func theRuleInErrorIsNamedByNumber() {
        #expect {
            _ = try SpeedSchedule(parsing: "Mon 09:00-18:00 1M; Tue 10:00-11:00 lots")
        } throws: { error in
            (error as? HaulError)?.message.hasPrefix("--limit-schedule: rule 2 'Tue 10:00-11:00 lots': ") == true
        }
    }
}
