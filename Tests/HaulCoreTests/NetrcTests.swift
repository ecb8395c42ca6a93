import HaulCore
import Testing

/// netrc as curl reads it.
@Suite(.timeLimit(.minutes(1))) struct NetrcTests {
    @Test func machinesLoginsAndDefault() throws {
        let netrc = try Netrc(
            parsing: """
                machine example.com login alice password s3cret
                machine other.example
                    login bob
                    password "two words"
                default login anonymous password guest@
                """)
        #expect(netrc.credentials(host: "example.com") == Credentials(user: "alice", password: "s3cret"))
        #expect(
            netrc.credentials(host: "EXAMPLE.com") == Credentials(user: "alice", password: "s3cret"),
            "hosts compare without case")
        #expect(netrc.credentials(host: "other.example") == Credentials(user: "bob", password: "two words"))
        #expect(
            netrc.credentials(host: "sub.example.com") == Credentials(user: "anonymous", password: "guest@"),
            "a machine matches its exact name only; the rest take default")
        #expect(netrc.credentials(host: "example.com", login: "alice")?.password == "s3cret")
        #expect(netrc.credentials(host: "example.com", login: "carol") == nil)
    }

    @Test func withoutDefaultUnknownHostsGetNothing() throws {
        let netrc = try Netrc(parsing: "machine a login x password y")
        #expect(netrc.credentials(host: "b") == nil)
        #expect(try Netrc(parsing: "").credentials(host: "a") == nil)
        #expect(
            try Netrc(parsing: "machine a password onlypassword").credentials(host: "a") == nil,
            "no login, no credentials")
        #expect(
            try Netrc(parsing: "machine a login onlylogin").credentials(host: "a")
                == Credentials(user: "onlylogin", password: ""))
    }

    @Test func macdefBlocksAreSkippedUpToTheEmptyLine() throws {
        let netrc = try Netrc(
            parsing: """
                macdef init
                machine evil login mallory password fromthemacro
                cd /pub

                machine good login alice password ok
                """)
        #expect(netrc.credentials(host: "evil") == nil)
        #expect(netrc.credentials(host: "good") == Credentials(user: "alice", password: "ok"))
        #expect(netrc.entries.count == 1)
    }

    @Test func quotedValuesAndEscapes() throws {
        let netrc = try Netrc(parsing: #"machine h login "a user" password "p\"q\\r\tx" account ignored"#)
        #expect(netrc.credentials(host: "h") == Credentials(user: "a user", password: "p\"q\\r\tx"))
        #expect(
            try Netrc(parsing: "machine h\tlogin\tu\r\npassword\tp\r\n").credentials(host: "h")
                == Credentials(user: "u", password: "p"))
    }

    @Test func firstMatchingMachineWins() throws {
        let netrc = try Netrc(parsing: "machine h login first password 1\nmachine h login second password 2")
        #expect(netrc.credentials(host: "h")?.user == "first")
        #expect(netrc.credentials(host: "h", login: "second")?.password == "2")
    }

    @Test func anUnterminatedQuoteIsAnErrorNamingTheLine() {
        let error = #expect(throws: HaulError.self) { try Netrc(parsing: "machine h\nlogin u\npassword \"open") }
        #expect(error?.code == .usage)
        #expect(error?.message == "line 3: a quoted value has no closing quote")
    }

    @Test func entriesDoNotPrintPasswords() throws {
        let netrc = try Netrc(parsing: "machine h login u password s3cret")
        #expect(!"\(netrc.entries)".contains("s3cret"))
    }
}
